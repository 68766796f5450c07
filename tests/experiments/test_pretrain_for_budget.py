"""`python -m experiments.pretrain_for_budget`: a wrong budget, and a run interrupted and started again."""

import json
from pathlib import Path

import pytest
import torch
from confection import Config
from typer.testing import CliRunner

from experiments import pretrain_for_budget as budget

from ..training.conftest import tiny_settings, write_corpus


@pytest.fixture(autouse=True)
def keep_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def config(tmp_path) -> Path:
    train, dev = write_corpus(tmp_path / "train.txt", 200), write_corpus(tmp_path / "dev.txt", 20, seed=1)
    path = tmp_path / "tiny.cfg"
    schedule = {"@pretrain_schedules": "spacy-elmo.linear.v1", "max_steps": "${training.max_steps}"}
    settings = tiny_settings(train, dev, training={"schedule": schedule, "checkpoint_every": 4, "eval_every": 0})
    Config(settings).to_disk(path)
    return path


def run_script(*args):
    return CliRunner().invoke(budget.app, [*map(str, args), "--device", "cpu"])


@pytest.mark.parametrize("minutes", ["-1", "0", "nan", "inf"])
def test_a_budget_that_is_not_a_positive_number_is_refused_before_the_probe(tmp_path, config, minutes):
    before = sorted(p.name for p in tmp_path.iterdir())
    from experiments.errors import ExperimentError

    result = run_script(config, tmp_path / "run", "--minutes", minutes)
    assert isinstance(result.exception, ExperimentError), result.output
    assert str(result.exception).startswith("--minutes: expected a positive number of minutes of training")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no probe, no prepared corpus


class Interrupted(Exception):
    pass


def test_a_rerun_after_an_interrupt_continues_with_the_stored_steps(tmp_path, config, monkeypatch):
    run = tmp_path / "run"
    calls = []
    real = budget.pretrain

    def spy(config_path, output_dir, **kwargs):
        calls.append((Path(output_dir).name, kwargs["overrides"]["training.max_steps"]))
        if Path(output_dir) == run and len(calls) == 2:  # the first training run: stopped after its checkpoint

            def interrupt(state, lm):
                if state.step == 5:
                    raise Interrupted()

            kwargs["on_step"] = interrupt
        return real(config_path, output_dir, **kwargs)

    monkeypatch.setattr(budget, "pretrain", spy)
    first = run_script(config, run, "--minutes", "0.02")
    assert isinstance(first.exception, Interrupted), first.output
    assert [name for name, _ in calls] == [".run.probe", "run"]
    steps = calls[1][1]
    assert steps > 5 and (run / "checkpoint.pt").exists()

    calls.clear()
    second = run_script(config, run, "--minutes", "0.05")  # another budget: the run's own steps still win
    assert second.exit_code == 0, second.output
    assert calls == [("run", steps)]
    said = " ".join(second.output.split())
    assert (
        f"Ignoring --minutes 0.05 (planned: 0.02): {run} holds a run planned for that budget as {steps:,} steps" in said
    )
    summary = json.loads((run / "budget_run.json").read_text())
    assert summary["steps"] == steps and summary["probe_seconds_per_step"] > 0
    assert summary["minutes"] == 0.02 and summary["max_epochs"] is None  # the budget the steps stand for

    calls.clear()
    third = run_script(config, run, "--minutes", "0.02")  # the run's own budget: nothing to say
    assert third.exit_code == 0 and "Ignoring" not in third.output and calls == [("run", steps)]


@pytest.mark.parametrize("epochs", ["-1", "0"])
def test_max_epochs_below_one_is_refused_before_the_probe(tmp_path, config, epochs):
    from experiments.errors import ExperimentError, run_app

    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_script(config, tmp_path / "run", "--minutes", "1", "--max-epochs", epochs)
    assert isinstance(result.exception, ExperimentError), result.output
    assert str(result.exception).startswith("--max-epochs: expected a whole number of epochs of 1 or more")
    assert f"found {epochs}" in str(result.exception)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no probe, no prepared corpus
    with pytest.raises(SystemExit) as stopped:
        run_app(budget.app, [str(config), str(tmp_path / "run"), "--minutes", "1", "--max-epochs", epochs])
    assert stopped.value.code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
