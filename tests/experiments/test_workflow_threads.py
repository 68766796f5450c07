"""The workflow's thread use is explicit and its long steps show progress: one project variable,
``vars.threads``, reaches every command that trains or tunes; no step hides its progress bar."""

import json
import shlex
from pathlib import Path

import pytest
import srsly
import typer
from typer.testing import CliRunner

from experiments.demo import train_seeds, tune
from experiments.engine.execute import dev_log_overrides

ROOT = Path(__file__).resolve().parents[2]
THREADS = "${vars.threads}"
# The modules and commands that train or tune in their own process, and the option each takes threads by.
THREAD_OPTIONS = {
    "experiments.demo.train_seeds": "--threads",
    "experiments.demo.tune": "--threads",
    "spacy_elmo pretrain": "--system.threads",
    "benchmarks/bench_tasks.py": "--threads",
}
# The job runners: --jobs jobs of one thread each.
JOB_RUNNERS = (
    "experiments.studies.curves run",
    "experiments.studies.v2eval",
    "experiments.studies.v1 --profile",
    "experiments.studies.cv run",
)


def script_lines():
    project = srsly.read_yaml(ROOT / "project.yml")
    return project, [(c["name"], line) for c in project["commands"] for line in c.get("script", [])]


def test_every_training_and_tuning_command_passes_vars_threads():
    project, lines = script_lines()
    assert project["vars"]["threads"] == 1
    seen = set()
    for name, line in lines:
        args = shlex.split(line)
        for command, option in THREAD_OPTIONS.items():
            if command in line:
                seen.add(command)
                assert args[args.index(option) + 1] == THREADS, f"{name}: {line}"
        if any(runner in line for runner in JOB_RUNNERS):
            seen.add("jobs")
            assert "--jobs" in args, f"{name}: {line}"
    assert seen == {*THREAD_OPTIONS, "jobs"}
    trains = [name for name, line in lines if "experiments.demo.train_seeds" in line]
    assert len(trains) == 4 and sum("spacy_elmo pretrain" in line for _, line in lines) == 5


def test_no_step_hides_its_progress():
    _, lines = script_lines()
    assert not [name for name, line in lines if "--no-progress" in line]
    tuning = tune.tuning_commands(tune.Tuning("ner", threads=1))[1]
    assert "--no-progress" not in tuning and tuning[tuning.index("--system.threads") + 1] == "1"
    # spaCy's training shows a bar of the steps to the next dev evaluation (on a terminal only)
    assert (
        dev_log_overrides(ROOT / "configs" / "textcat_elmo.cfg", {}, Path("run"))["training.logger.progress_bar"]
        == "eval"
    )


@pytest.fixture
def torch_threads():
    import torch

    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2])
def test_train_seeds_trains_on_the_threads_it_is_given(tmp_path, monkeypatch, torch_threads, threads):
    torch_threads.set_num_threads(3)
    seen = {}
    monkeypatch.setattr(
        train_seeds, "train_seeds", lambda *args: seen.setdefault("threads", torch_threads.get_num_threads())
    )
    config = tmp_path / "c.cfg"
    config.write_text("")
    app = typer.Typer()
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(train_seeds.main)
    result = CliRunner().invoke(app, [str(config), str(tmp_path / "out"), "--threads", str(threads)])
    assert result.exit_code == 0, result.output
    assert seen == {"threads": threads}


def test_a_tuning_recorded_with_another_progress_display_or_thread_count_is_still_done(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    e = tune.Tuning("ner", threads=1)
    record = tune.tuning_record(e)
    assert not [c for c in record["commands"] if {"--no-progress", "--system.threads"} & set(c)]
    # as an earlier version wrote it: --no-progress and two threads in the tuning command
    stored = json.loads(json.dumps(record))
    stored["commands"][1][6:6] = ["--no-progress", "--system.threads", "2"]
    Path(e.record).parent.mkdir(parents=True)
    Path(e.record).write_text(json.dumps(stored))
    assert tune.is_tuned(e) and tune.is_tuned(tune.Tuning("ner", threads=4))
    stored["commands"][1][stored["commands"][1].index("--training.max_steps") + 1] = "7"
    Path(e.record).write_text(json.dumps(stored))
    assert not tune.is_tuned(e)  # another number of steps is another tuning
