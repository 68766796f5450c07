"""The v1 study's plan (experiments/studies/v1.py) and the tuning it runs (experiments/demo/tune.py): its
jobs, their commands and order, and when each counts as done. Nothing is trained: training and scoring are
replaced by fakes."""

import hashlib
import json
import shlex
import shutil
from pathlib import Path

import pytest
import srsly
import typer
from typer.testing import CliRunner

from experiments.data import published
from experiments.demo import evaluate_seeds
from experiments.demo import tune as demo_tune
from experiments.engine import plan
from experiments.engine.execute import TRAIN_LOG, dev_log_overrides
from experiments.engine.jobs import Summary, check_jobs
from experiments.engine.run import Run as EngineRun
from experiments.studies import v1
from spacy_elmo import shipped_models

from .helpers import fake_scoring, trained_model

ROOT = Path(__file__).resolve().parents[2]
LONG = v1.Study(
    profile="long",
    steps=3000,
    eval_frequency=500,
    seeds=(0, 1, 2),
    variants=("baseline", "elmo"),
    reuse_tuned_from="full",
)


def by_name(jobs):
    return {job.name: job for job in jobs}


def position(jobs, name):
    return [job.name for job in jobs].index(name)


def settings_of(job):
    """The spacy train settings of an engine job's run."""
    return EngineRun.from_json(job.command[job.command.index("--run") + 1]).settings


def args_of(command, flag):
    """A flag's value on a command line; on an engine job's, a config setting of its run."""
    if flag not in command and "--run" in command:
        return str(EngineRun.from_json(command[command.index("--run") + 1]).settings[flag[2:]])
    return command[command.index(flag) + 1]


def test_the_full_plan_has_every_step_and_seed():
    jobs = v1.plan_jobs(v1.Study())
    check_jobs(jobs)  # unique names, each after what it needs
    names = [job.name for job in jobs]
    assert names[:2] == ["convert_ner", "convert_sentiment5"]
    assert {"tune_ner", "tune_sentiment5"} < set(names)
    trains = [n for n in names if "_seed" in n]
    assert len(trains) == 2 * 3 * 5
    assert names[-1] == "report"
    assert len(names) == 2 + 4 + 2 + 30 + 6 + 1
    assert all(job.log == Path("logs/full") / f"{job.name}.log" for job in jobs)


def test_tuning_comes_before_the_elmo_runs_that_read_it_and_only_those():
    jobs = v1.plan_jobs(v1.Study())
    named = by_name(jobs)
    for task in v1.TASKS:
        assert named[f"tune_{task}"].needs == (f"text_{task}_train", f"text_{task}_dev")
        for seed in range(5):
            elmo = named[f"{task}_elmo_seed{seed}"]
            assert f"tune_{task}" in elmo.needs and position(jobs, f"tune_{task}") < position(jobs, elmo.name)
            assert args_of(elmo.command, "--paths.elmo") == f"training/full/bilm_{task}/model"
            untuned = named[f"{task}_elmo_untuned_seed{seed}"]
            assert args_of(untuned.command, "--paths.elmo") == "elmo-en-small"
            baseline = named[f"{task}_baseline_seed{seed}"]
            assert "paths.elmo" not in settings_of(baseline)
            for run in (baseline, untuned):  # they need the corpus only, so they can start during the tuning
                assert run.needs == (f"convert_{task}",)


def test_the_score_files_come_after_the_training_they_show_and_the_report_last():
    jobs = v1.plan_jobs(v1.Study(seeds=(0, 1)))
    named = by_name(jobs)
    for task in v1.TASKS:
        for variant in v1.VARIANTS:
            scores = named[f"scores_{task}_{variant}"]
            trains = (f"{task}_{variant}_seed0", f"{task}_{variant}_seed1")
            assert scores.needs == trains
            assert all(position(jobs, t) < position(jobs, scores.name) for t in trains)
            assert scores.command[2:] == (
                "experiments.engine.views",
                "metrics/full/records",
                "metrics/full",
                f"{task}_{variant}/seed0",
                f"{task}_{variant}/seed1",
            )
    report = named["report"]
    assert set(report.needs) == {n for n in named if n.startswith("scores_")}
    assert report.command[2:] == (
        "experiments.report.comparison",
        "metrics/full",
        "training/full",
        "reports/full",
        "--title",
        "Profile full, seeds 0 1",
    )


def test_the_commands_are_those_of_the_experiment():
    e = v1.Study(gpu_id=0, tune_steps=150)
    named = by_name(v1.plan_jobs(e))
    train = named["sentiment5_elmo_seed3"].command
    assert train[1:5] == ("-m", "experiments.engine.execute", "metrics/full/records", "training/full")
    assert train[-3:] == ("--keep-model", "--gpu-id", "0")
    run = EngineRun.from_json(args_of(train, "--run"))
    assert (run.id, run.config, run.seed, run.test) == (
        "sentiment5_elmo/seed3",
        "configs/textcat_elmo.cfg",
        3,
        "corpus/full/sentiment5/test.spacy",
    )
    assert run.overrides == (
        ("paths.train", "corpus/full/sentiment5/train.spacy"),
        ("paths.dev", "corpus/full/sentiment5/dev.spacy"),
        ("training.max_steps", 1000),
        ("training.eval_frequency", 200),
        ("paths.elmo", "training/full/bilm_sentiment5/model"),
    )
    assert named["convert_ner"].command[1:] == (
        "-m",
        "experiments.convert.ner",
        "assets/wnut16/ner.txt",
        "corpus/full/ner",
    )
    assert named["text_ner_dev"].command[2:] == (
        "experiments.convert.task_text",
        "corpus/full/ner/dev.spacy",
        "corpus/full/ner/dev.txt",
    )
    before, tune, after = (command[1:] for command in demo_tune.tuning_commands(e.tuning("ner")))
    assert before == [
        "-m",
        "spacy_elmo",
        "perplexity",
        "elmo-en-small",
        "corpus/full/ner/dev.txt",
        "--device",
        "cuda:0",
        "--overwrite",
        "--output",
        "metrics/full/bilm_ner_before.json",
    ]
    assert tune[:6] == [
        "-m",
        "spacy_elmo",
        "pretrain",
        "configs/bilm_release.cfg",
        "training/full/bilm_ner",
        "--resume",
    ]
    for flag, value in (
        ("--init-from", "elmo-en-small"),
        ("--training.max_steps", "150"),
        ("--paths.train", "corpus/full/ner/train.txt"),
        ("--paths.dev", "corpus/full/ner/dev.txt"),
        ("--vocab.path", "elmo-en-small"),
        ("--training.tokens_per_batch", "2000"),
        ("--training.optimizer.learn_rate", "0.0005"),
    ):
        assert args_of(tune, flag) == value
    assert after[3:5] == ["training/full/bilm_ner/model", "corpus/full/ner/dev.txt"]
    assert args_of(after, "--output") == "metrics/full/bilm_ner_after.json"
    tune_job = named["tune_ner"].command
    assert tune_job[1:4] == ("-m", "experiments.demo.tune", "ner")
    assert args_of(tune_job, "--tune-steps") == "150" and args_of(tune_job, "--gpu-id") == "0"


def test_a_profile_reusing_another_s_corpora_and_tuned_biLMs():
    jobs = v1.plan_jobs(LONG)
    named = by_name(jobs)
    assert not [n for n in named if n.startswith(("convert_", "text_", "tune_"))]
    assert len(named) == 2 * 2 * 3 + 4 + 1
    elmo = named["ner_elmo_seed2"]
    assert elmo.needs == ()
    assert elmo.command[2:5] == ("experiments.engine.execute", "metrics/long/records", "training/long")
    assert EngineRun.from_json(args_of(elmo.command, "--run")).config == "configs/ner_elmo.cfg"
    assert args_of(elmo.command, "--paths.elmo") == "training/full/bilm_ner/model"
    assert args_of(elmo.command, "--paths.train") == "corpus/full/ner/train.spacy"
    assert args_of(elmo.command, "--training.max_steps") == "3000"
    assert args_of(elmo.command, "--training.eval_frequency") == "500"
    assert named["scores_sentiment5_elmo"].command[3:5] == ("metrics/long/records", "metrics/long")
    assert named["report"].command[3:6] == ("metrics/long", "training/long", "reports/long")
    assert all(job.log.parent == Path("logs/long") for job in jobs)


def ship(package: Path, weights: bytes) -> None:
    """A fake shipped elmo-en-small in `package` (the installed package's pretrained/), with its SHA256SUMS."""
    bilm = package / "elmo-en-small"
    bilm.mkdir(parents=True, exist_ok=True)
    (bilm / "weights.hdf5").write_bytes(weights)
    (bilm / "vocab.txt").write_text("<S>\n</S>\n<UNK>\n")
    sums = "".join(
        f"{hashlib.sha256((bilm / name).read_bytes()).hexdigest()}  {name}\n" for name in ("weights.hdf5", "vocab.txt")
    )
    (bilm / shipped_models.SUMS_NAME).write_text(sums)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with the configs, and a fake shipped biLM (the Experiment's default, by name)
    in a fake package folder; the working folder while the test runs."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    ship(tmp_path / "package", b"weights v1")
    monkeypatch.setattr(shipped_models, "pretrained_dir", lambda: tmp_path / "package")
    for task in v1.TASKS:
        corpus = tmp_path / "corpus" / "full" / task
        corpus.mkdir(parents=True)
        for split in ("train", "dev", "test"):
            (corpus / f"{split}.spacy").write_bytes(f"{task} {split} v1".encode())
            (corpus / f"{split}.txt").write_text(f"{task} {split} text\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def fake_train(monkeypatch):
    """The engine's training and scoring, replaced by fakes: a model-best folder, fixed scores."""
    import spacy.cli.train

    import spacy_elmo.layer_mixes
    from experiments.engine import execute as execute_module

    calls = []

    def train(config_path, output_path, use_gpu=-1, overrides=None):
        calls.append(dict(overrides))
        (output_path / "model-best").mkdir(parents=True)
        (output_path / "model-best" / "meta.json").write_text(json.dumps({"seed": overrides["system.seed"]}))

    monkeypatch.setattr(spacy.cli.train, "train", train)
    monkeypatch.setattr(spacy, "load", lambda path: path)
    monkeypatch.setattr(execute_module, "evaluate", lambda nlp, test: ({"ents_f": 0.5}, {"tp": 1, "fp": 1, "fn": 1}))
    monkeypatch.setattr(execute_module, "sizes", lambda run: {})
    monkeypatch.setattr(spacy_elmo.layer_mixes, "listener_mixes", lambda nlp: {})
    return calls


def run_job_here(job):
    """An engine job's command, in this process (as its subprocess would run it)."""
    from experiments.engine import execute as execute_module

    app = typer.Typer(add_completion=False)
    app.command()(execute_module.main)
    assert job.command[1:3] == ("-m", "experiments.engine.execute")
    result = CliRunner().invoke(app, list(job.command[3:]))
    assert result.exit_code == 0, result.output


def test_a_training_job_is_done_exactly_when_its_record_holds_what_it_would_train_from(project, fake_train):
    job = by_name(v1.plan_jobs(v1.Study(seeds=(4,))))["ner_elmo_untuned_seed4"]
    assert not job.done()
    run_job_here(job)
    assert job.done() and len(fake_train) == 1
    assert (project / "training" / "full" / "ner_elmo_untuned" / "seed4" / "model-best").is_dir()  # kept
    assert srsly.read_json("metrics/full/records/ner_elmo_untuned/seed4.json")["scores"] == {"ents_f": 0.5}
    longer = by_name(v1.plan_jobs(v1.Study(seeds=(4,), steps=2000)))["ner_elmo_untuned_seed4"]
    assert not longer.done()  # another number of steps
    ship(project / "package", b"weights v2")  # another release of the shipped biLM
    assert not job.done()  # another biLM


def test_each_run_keeps_its_dev_curve_and_the_logger_is_not_in_the_fingerprint(project, fake_train):
    job = by_name(v1.plan_jobs(v1.Study(seeds=(4,))))["ner_elmo_untuned_seed4"]
    run_job_here(job)
    (settings,) = fake_train
    assert settings["training.logger.@loggers"] == "spacy.ConsoleLogger.v3"
    log = Path(settings["training.logger.output_file"])
    assert log.name == TRAIN_LOG and log.parent.name == ".seed4.partial"  # moved with the run
    assert job.done()  # the fingerprint is of the user's settings alone, so the run is not stale


def test_a_config_with_its_own_logger_keeps_it(tmp_path):
    config = tmp_path / "other_logger.cfg"
    text = (ROOT / "configs" / "ner_baseline.cfg").read_text()
    config.write_text(text.replace('@loggers = "spacy.ConsoleLogger.v1"', '@loggers = "spacy.LookupLogger.v1"'))
    assert dev_log_overrides(config, {}, tmp_path) == {}
    assert dev_log_overrides(ROOT / "configs" / "ner_baseline.cfg", {}, tmp_path)


def test_a_tuning_job_is_done_while_its_record_matches_its_inputs_and_outputs(project):
    e = v1.Study()
    job = by_name(v1.plan_jobs(e))["tune_ner"]
    assert not job.done()
    model = project / "training" / "full" / "bilm_ner" / "model"
    model.mkdir(parents=True)
    (model / "weights.hdf5").write_bytes(b"tuned")
    for when in ("before", "after"):
        (project / "metrics" / "full").mkdir(parents=True, exist_ok=True)
        (project / f"metrics/full/bilm_ner_{when}.json").write_text('{"mean": 100}')
    tuning = e.tuning("ner")
    Path(tuning.record).write_text(json.dumps(demo_tune.tuning_record(tuning)))  # as the tune step leaves it
    assert job.done()
    assert not by_name(v1.plan_jobs(v1.Study(tune_steps=300)))["tune_ner"].done()  # other commands
    (project / "corpus" / "full" / "ner" / "train.txt").write_text("converted again, other text\n")
    assert not job.done()  # other training text
    Path(tuning.record).write_text(json.dumps(demo_tune.tuning_record(tuning)))
    (model / "weights.hdf5").write_bytes(b"changed by hand")
    assert not job.done()  # the tuned biLM is not what the tuning left


def test_the_tune_command_runs_the_three_commands_and_records_them(project, monkeypatch):
    ran = []

    def call(command):
        ran.append(command[1:4])
        if command[3] == "pretrain":
            (project / "training" / "full" / "bilm_ner" / "model").mkdir(parents=True)
        return 0

    monkeypatch.setattr(demo_tune.subprocess, "call", call)
    monkeypatch.setattr(demo_tune, "ROOT", project)
    e = v1.Study()
    result = CliRunner().invoke(demo_tune.app, ["ner"])
    assert result.exit_code == 0, result.output
    assert ran == [
        ["-m", "spacy_elmo", "perplexity"],
        ["-m", "spacy_elmo", "pretrain"],
        ["-m", "spacy_elmo", "perplexity"],
    ]
    assert demo_tune.is_tuned(e.tuning("ner"))
    monkeypatch.setattr(demo_tune.subprocess, "call", lambda command: 5 if command[3] == "pretrain" else 0)
    Path(e.tuning("ner").record).unlink()
    result = CliRunner().invoke(demo_tune.app, ["ner"])
    assert result.exit_code == 5 and "exited with status 5" in result.output
    assert not demo_tune.is_tuned(e.tuning("ner"))  # a failed tuning is not done


def test_a_tuning_of_other_text_starts_afresh_and_an_interrupted_one_resumes(project, monkeypatch):
    ran = []
    tuning = project / "training" / "full" / "bilm_ner"

    def call(command):
        if command[3] == "pretrain":
            ran.append(sorted(p.name for p in tuning.iterdir()) if tuning.exists() else [])
            (tuning / "model").mkdir(parents=True, exist_ok=True)
            (tuning / "checkpoint.pt").write_bytes(
                b"trained on " + Path(args_of(command, "--paths.train")).read_bytes()
            )
        return 0

    monkeypatch.setattr(demo_tune.subprocess, "call", call)
    monkeypatch.setattr(demo_tune, "ROOT", project)
    assert CliRunner().invoke(demo_tune.app, ["ner"]).exit_code == 0
    assert CliRunner().invoke(demo_tune.app, ["ner"]).exit_code == 0  # the same tuning again: resumed
    assert ran == [[], ["checkpoint.pt", "model"]]
    tweets = project / "tweets.txt"
    tweets.write_text("an unlabelled tweet\n")
    assert CliRunner().invoke(demo_tune.app, ["ner", "--tune-text", "tweets.txt"]).exit_code == 0
    assert ran[2] == []  # other text: the folder of the split's tuning was removed first
    assert (tuning / "checkpoint.pt").read_bytes() == b"trained on an unlabelled tweet\n"
    tweets.write_text("other tweets\n")
    assert CliRunner().invoke(demo_tune.app, ["ner", "--tune-text", "tweets.txt"]).exit_code == 0
    assert ran[3] == []  # the same path with other contents: afresh too

    monkeypatch.setattr(demo_tune.subprocess, "call", lambda command: 9 if command[3] == "pretrain" else call(command))
    tweets.write_text("yet other tweets\n")
    assert CliRunner().invoke(demo_tune.app, ["ner", "--tune-text", "tweets.txt"]).exit_code == 9
    (tuning / "model").mkdir(parents=True)  # what the interrupted pretrain left
    (tuning / "checkpoint.pt").write_bytes(b"interrupted")
    monkeypatch.setattr(demo_tune.subprocess, "call", call)
    assert CliRunner().invoke(demo_tune.app, ["ner", "--tune-text", "tweets.txt"]).exit_code == 0
    assert ran[4] == ["checkpoint.pt", "model"]  # an interrupted run of the same tuning: kept, to resume


def test_the_biLM_is_tuned_on_unlabelled_text_when_given_one(project, monkeypatch):
    tweets = project / "corpus" / "v2" / "pretrain" / "train_tweets.txt"
    e = v1.Study(tune_texts=(("ner", "corpus/v2/pretrain/train_tweets.txt"),))
    assert e.tuning("sentiment5").train_text == "corpus/full/sentiment5/train.txt"  # the other task: its split
    tune = demo_tune.tuning_commands(e.tuning("ner"))[1]
    assert args_of(tune, "--paths.train") == "corpus/v2/pretrain/train_tweets.txt"
    job = by_name(v1.plan_jobs(e))["tune_ner"]
    assert args_of(job.command, "--tune-text") == "corpus/v2/pretrain/train_tweets.txt"
    assert "corpus/v2/pretrain/train_tweets.txt" in demo_tune.tuning_record(e.tuning("ner"))["inputs"]

    ran = []

    def call(command):
        ran.append(command)
        if command[3] == "pretrain":
            (project / "training" / "full" / "bilm_ner" / "model").mkdir(parents=True, exist_ok=True)
        return 0

    monkeypatch.setattr(demo_tune.subprocess, "call", call)
    monkeypatch.setattr(demo_tune, "ROOT", project)
    missing = CliRunner().invoke(demo_tune.app, ["ner", "--tune-text", "corpus/v2/pretrain/train_tweets.txt"])
    assert (
        missing.exit_code == 2
        and "expected the text to tune on at corpus/v2/pretrain/train_tweets.txt" in missing.output
    )
    assert not ran
    tweets.parent.mkdir(parents=True)
    tweets.write_text("an unlabelled tweet\n")
    result = CliRunner().invoke(demo_tune.app, ["ner", "--tune-text", "corpus/v2/pretrain/train_tweets.txt"])
    assert result.exit_code == 0, result.output
    assert args_of(ran[1], "--paths.train") == "corpus/v2/pretrain/train_tweets.txt"
    assert demo_tune.is_tuned(e.tuning("ner"))
    assert not demo_tune.is_tuned(v1.Study().tuning("ner"))  # the split's tuning is another
    tweets.write_text("other tweets\n")
    assert not demo_tune.is_tuned(e.tuning("ner"))  # tuned on other text


def test_a_tune_text_names_its_task():
    assert v1.parse_tune_texts(["ner=a.txt", "sentiment5="]) == (("ner", "a.txt"),)
    for bad in ("a.txt", "pos=a.txt"):
        with pytest.raises(typer.BadParameter, match="expected TASK=PATH"):
            v1.parse_tune_texts([bad])
    with pytest.raises(typer.BadParameter, match="reuses full's tuned biLMs tunes none"):
        v1.study_of("long", "0", 10, 5, 1, "b", -1, "baseline,elmo", "full", None, "", ["ner=a.txt"])


def test_a_seed_is_scored_again_only_when_its_model_or_the_test_split_changed(project, monkeypatch):
    from experiments.engine.run import is_done

    scored = fake_scoring(monkeypatch)
    run_dir = Path("training") / "full" / "ner_baseline"
    for seed in (0, 1):
        trained_model(run_dir / f"seed{seed}" / "model-best", seed, f"seed {seed}".encode())
    test = Path("corpus/full/ner/test.spacy")
    records = evaluate_seeds.records_dir(Path("metrics/full"))

    def current():
        models = [run_dir / f"seed{seed}" / "model-best" for seed in (0, 1)]
        return [is_done(evaluate_seeds.seed_run(m, test), records) for m in models]

    assert current() == [False, False]
    evaluate_seeds.evaluate_runs(test, Path("metrics/full"), [run_dir])
    assert len(scored) == 2 and current() == [True, True]
    record = srsly.read_json("metrics/full/ner_baseline/seed1.json")
    assert record["ents_f"] == 0.5 and set(record["evaluated"]) == {"model", "test"}
    assert record[evaluate_seeds.RUN] == "training/full/ner_baseline"
    assert srsly.read_json(records / "ner_baseline" / "seed1.json")["scores"] == {"ents_f": 0.5}
    evaluate_seeds.evaluate_runs(test, Path("metrics/full"), [run_dir])
    assert len(scored) == 2  # both current: kept
    (run_dir / "seed1" / "model-best" / "model").write_bytes(b"trained again")
    assert current() == [True, False]
    evaluate_seeds.evaluate_runs(test, Path("metrics/full"), [run_dir])
    assert [m.parent.name for m in scored[2:]] == ["seed1"]
    test.write_bytes(b"converted again")
    assert current() == [False, False]
    evaluate_seeds.evaluate_runs(test, Path("metrics/full"), [run_dir])
    assert len(scored) == 5


def test_the_command_line_runs_by_default_and_checks_what_a_reusing_profile_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(v1, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(v1.app, ["--profile", "long", "--reuse-tuned-from", "full", "--seeds", "0"])
    assert result.exit_code == 2
    assert (
        "corpus/full/ner/train.spacy" in result.output and "training/full/bilm_ner/model/weights.hdf5" in result.output
    )
    assert "python -m experiments.studies.v1 --profile full" in result.output
    for bad in (["--variants", "baseline,bert"], ["--seeds", "one"]):
        result = CliRunner().invoke(v1.app, bad)
        assert result.exit_code == 2 and ("--variants" in result.output or "--seeds" in result.output)


def test_the_run_hands_the_plan_to_the_runner_and_fails_when_a_job_failed(tmp_path, monkeypatch):
    handed = {}

    def fake_run_jobs(jobs, n_jobs, minutes=None, cwd=None, **kwargs):
        handed.update(names=[job.name for job in jobs], n_jobs=n_jobs, minutes=minutes, cwd=cwd)
        return Summary(ran=["convert_ner"], failed=["tune_ner"], blocked=["ner_elmo_seed0"])

    monkeypatch.setattr(plan, "run_jobs", fake_run_jobs)
    monkeypatch.setattr(v1, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(v1.app, ["--jobs", "4", "--minutes", "30", "--seeds", "0"])
    assert result.exit_code == 1
    assert handed == {
        "names": [job.name for job in v1.plan_jobs(v1.Study(seeds=(0,)))],
        "n_jobs": 4,
        "minutes": 30,
        "cwd": tmp_path,
    }
    assert "1 failed: tune_ner" in result.output and "ner_elmo_seed0" in result.output


def test_project_yml_runs_the_full_experiment_through_this_module(tmp_path, monkeypatch):
    project = srsly.read_yaml(ROOT / "project.yml")
    (command,) = [c for c in project["commands"] if c["name"] == "run-v1"]
    (script,) = command["script"]
    for key, value in project["vars"].items():
        script = script.replace("${vars.%s}" % key, str(value))
    args = shlex.split(script)
    assert args[:3] == ["python", "-m", "experiments.studies.v1"]
    planned = {}
    monkeypatch.setattr(v1, "plan_jobs", lambda e: planned.setdefault("experiment", e) and [])
    monkeypatch.setattr(
        plan, "run_jobs", lambda jobs, n_jobs, **kwargs: planned.setdefault("n_jobs", n_jobs) and Summary()
    )
    monkeypatch.setattr(v1, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(v1.app, args[3:])
    assert result.exit_code == 0, result.output
    assert planned["experiment"] == v1.Study(gpu_id=project["vars"]["gpu_id"], bilm=project["vars"]["bilm"])
    assert planned["n_jobs"] == 2
    assert not list((ROOT / "experiments" / "studies").glob("*.sh"))


# A published AllenNLP model instead of the project's biLM (vars.published, --published).

PUBLISHED = "2x1024_128_2048cnn_1xhighway"
FIXTURE = ROOT / "tests" / "fixtures" / "allennlp_elmo"


def lay_out_published(project, name=PUBLISHED):
    """The fixture biLM (AllenNLP's format) under the asset's dest names, as if downloaded."""
    folder = project / published.PUBLISHED_DIR / name
    folder.mkdir(parents=True)
    shutil.copy(FIXTURE / "options.json", folder / "options.json")
    shutil.copy(FIXTURE / "lm_weights.hdf5", folder / "weights.hdf5")
    return folder


def test_with_a_published_model_nothing_is_tuned_and_the_elmo_runs_read_it():
    jobs = v1.plan_jobs(v1.Study(published=PUBLISHED, seeds=(0, 1)))
    check_jobs(jobs)
    named = by_name(jobs)
    assert not [n for n in named if n.startswith("tune_")]
    assert not [n for n in named if "elmo_untuned" in n]  # the same runs as `elmo` now
    for task in v1.TASKS:
        for seed in (0, 1):
            elmo = named[f"{task}_elmo_seed{seed}"]
            assert args_of(elmo.command, "--paths.elmo") == f"assets/published/{PUBLISHED}"
            assert elmo.needs == (f"convert_{task}",)
    assert len(named) == 2 + 4 + 2 * 2 * 2 + 2 * 2 + 1


def test_the_tune_step_with_a_published_model_links_it_and_tunes_nothing(project, monkeypatch):
    from spacy_elmo.bilm import BiLM

    monkeypatch.setattr(demo_tune, "ROOT", project)
    monkeypatch.setattr(demo_tune.subprocess, "call", lambda command: pytest.fail(f"ran {command}"))
    source = lay_out_published(project)
    e = v1.Study(published=PUBLISHED)
    stale = project / "training" / "full" / "bilm_ner"  # a tuning of the project's biLM, from before
    (stale / "model").mkdir(parents=True)
    (stale / "model" / "weights.hdf5").write_bytes(b"tuned from the project's biLM")
    (stale / "checkpoint.pt").write_bytes(b"step 100")
    (project / "metrics" / "full").mkdir(parents=True)
    for when in ("before", "after"):
        Path(e.tuning("ner").perplexity_file(when)).write_text('{"mean": 100}')
    result = CliRunner().invoke(demo_tune.app, ["ner", "--published", PUBLISHED])
    assert result.exit_code == 0, result.output
    model = project / e.tuning("ner").model
    assert sorted(p.name for p in stale.iterdir()) == ["model"]
    for file in ("options.json", "weights.hdf5"):
        assert (model / file).read_bytes() == (source / file).read_bytes()
    assert not [when for when in ("before", "after") if Path(e.tuning("ner").perplexity_file(when)).exists()]
    reference = BiLM.from_allennlp(FIXTURE / "options.json", FIXTURE / "lm_weights.hdf5")
    linked = BiLM.from_allennlp(model)  # what `--paths.elmo training/full/bilm_ner/model` reads
    assert linked.n_layers == reference.n_layers and linked.output_dim == reference.output_dim


@pytest.mark.parametrize("app,command", [(demo_tune.app, ["ner"]), (v1.app, ["--seeds", "0"]), (v1.app, ["plan"])])
def test_a_published_model_not_downloaded_fails_in_one_line_saying_what_to_do(tmp_path, monkeypatch, app, command):
    monkeypatch.setattr(demo_tune, "ROOT", tmp_path)
    monkeypatch.setattr(v1, "ROOT", tmp_path)
    monkeypatch.setattr(plan, "run_jobs", lambda *args, **kwargs: pytest.fail("ran the jobs"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, [*command, "--published", PUBLISHED])
    if command == ["plan"]:  # the plan only lists the jobs
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    (line,) = result.output.strip().splitlines()
    assert line.startswith(
        f"error: assets/published/{PUBLISHED}/options.json and "
        f"assets/published/{PUBLISHED}/weights.hdf5: expected the published model {PUBLISHED}'s "
        "options.json and weights.hdf5, found neither; run "
        "`python -m spacy project assets --extra` on a machine with internet access"
    )
    assert "allennlp.s3.amazonaws.com" in line and "copy the two files there" in line
    (tmp_path / published.PUBLISHED_DIR / PUBLISHED).mkdir(parents=True)
    shutil.copy(FIXTURE / "options.json", tmp_path / published.PUBLISHED_DIR / PUBLISHED / "options.json")
    result = CliRunner().invoke(app, [*command, "--published", PUBLISHED])
    assert result.exit_code == 1 and f"error: assets/published/{PUBLISHED}/weights.hdf5: expected" in result.output
    assert "found no such file" in result.output


def test_an_unknown_published_model_is_named_with_the_known_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(demo_tune, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(demo_tune.app, ["ner", "--published", "elmo_large"])
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: --published: expected one of this project's published ELMo models")
    assert "found 'elmo_large'" in line and all(name in line for name in published.PUBLISHED)
