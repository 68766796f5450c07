"""Runs over seeds are redone when what they were trained from changed, and only then."""

import json
from pathlib import Path

import pytest
from spacy.util import load_config

from experiments.demo import train_seeds as train_seeds_module
from experiments.engine import run as engine_run
from experiments.engine.run import changed, config_fingerprint

from .helpers import fake_scoring, trained_model

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "ner_elmo.cfg"


@pytest.fixture
def fake_train(monkeypatch):
    """spaCy's train, replaced by one that writes model-best/config.cfg as it would have trained it."""
    import spacy.cli.train

    calls = []

    def train(config_path, output_path, use_gpu=-1, overrides=None):
        calls.append(dict(overrides))
        config = load_config(config_path, overrides=overrides, interpolate=False)
        (output_path / "model-best").mkdir(parents=True)
        config.to_disk(output_path / "model-best" / "config.cfg")
        (output_path / "model-best" / "model").write_bytes(f"weights of training {len(calls)}".encode())

    monkeypatch.setattr(spacy.cli.train, "train", train)
    return calls


def inputs(tmp_path: Path) -> dict:
    (tmp_path / "train.spacy").write_bytes(b"train v1")
    (tmp_path / "dev.spacy").write_bytes(b"dev v1")
    bilm = tmp_path / "bilm"
    bilm.mkdir()
    (bilm / "options.json").write_text("{}")
    (bilm / "weights.hdf5").write_bytes(b"weights v1")
    return {
        "paths.train": str(tmp_path / "train.spacy"),
        "paths.dev": str(tmp_path / "dev.spacy"),
        "paths.elmo": str(bilm),
    }


def run_fingerprint(config: Path, settings: dict) -> dict:
    return config_fingerprint(str(config), settings)


def max_steps_of(run_dir: Path) -> int:
    return load_config(run_dir / "model-best" / "config.cfg")["training"]["max_steps"]


def test_a_changed_override_trains_the_seed_again(tmp_path, fake_train):
    overrides = inputs(tmp_path)
    out = tmp_path / "runs"
    train_seeds_module.train_seeds(CONFIG, out, [0], {**overrides, "training.max_steps": 5})
    train_seeds_module.train_seeds(CONFIG, out, [0], {**overrides, "training.max_steps": 50})
    assert len(fake_train) == 2
    assert max_steps_of(out / "seed0") == 50
    assert not list(out.glob(".seed0.*"))  # no partial or stale folder left


def test_the_same_run_is_skipped(tmp_path, fake_train, capsys):
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    out = tmp_path / "runs"
    train_seeds_module.train_seeds(CONFIG, out, [0, 1], overrides)
    train_seeds_module.train_seeds(CONFIG, out, [0, 1], overrides)
    assert [call["system.seed"] for call in fake_train] == [0, 1]
    assert "skipped" in capsys.readouterr().out


@pytest.mark.parametrize("what", ["data", "bilm"])
def test_changed_data_or_a_retuned_bilm_trains_the_seed_again(tmp_path, fake_train, capsys, what):
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    out = tmp_path / "runs"
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    if what == "data":
        (tmp_path / "train.spacy").write_bytes(b"train v2")
    else:
        (tmp_path / "bilm" / "weights.hdf5").write_bytes(b"weights v2")
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    assert len(fake_train) == 2
    expected = "paths.train" if what == "data" else "paths.elmo"
    assert f"reads {expected} changed)" in capsys.readouterr().out


def test_a_run_without_a_fingerprint_is_not_trusted(tmp_path, fake_train):
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    out = tmp_path / "runs"
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    (out / "seed0" / train_seeds_module.TRAINING_FINGERPRINT).unlink()  # as a run of an older version left it
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    assert len(fake_train) == 2
    assert train_seeds_module.stored_training_fingerprint(out / "seed0") == run_fingerprint(
        CONFIG, {**overrides, "system.seed": 0}
    )


def test_the_fingerprint_sees_a_changed_default_inside_the_config(tmp_path):
    overrides = inputs(tmp_path)
    config = tmp_path / "ner.cfg"
    config.write_text(CONFIG.read_text(encoding="utf-8"), encoding="utf-8")
    before = run_fingerprint(config, overrides)
    config.write_text(CONFIG.read_text(encoding="utf-8").replace("dropout = 0.1", "dropout = 0.2"), encoding="utf-8")
    assert changed(before, run_fingerprint(config, overrides)) == ["config"]
    assert changed(None, before) == ["no fingerprint stored with the run"]
    assert json.loads(json.dumps(before)) == before


def test_overrides_come_from_the_command_line_and_the_environment_through_weasels_parser(
    tmp_path, fake_train, monkeypatch
):
    import typer
    import weasel.util
    from typer.testing import CliRunner

    from experiments import pretrain_for_budget

    # spaCy's own CLI parses them with weasel's public function; so do these scripts.
    assert engine_run.parse_config_overrides is weasel.util.parse_config_overrides
    assert pretrain_for_budget.parse_config_overrides is weasel.util.parse_config_overrides
    app = typer.Typer(add_completion=False)
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(train_seeds_module.main)
    args = [f"--{key}={value}" for key, value in inputs(tmp_path).items()]
    monkeypatch.setenv("SPACY_CONFIG_OVERRIDES", "--training.max_steps 7")
    result = CliRunner().invoke(app, [str(CONFIG), str(tmp_path / "out"), "--seeds", "3", *args])
    assert result.exit_code == 0, result.output
    assert fake_train[0]["training.max_steps"] == 7 and fake_train[0]["system.seed"] == 3
    assert fake_train[0]["paths.train"] == str(tmp_path / "train.spacy")


def test_a_bilm_named_by_options_file_and_retrained_in_place_trains_the_seed_again(tmp_path, fake_train, capsys):
    """Issue 37, 5: the config's own comment offers initialize.components.elmo.options_file; a biLM
    named there (not under [paths]) and exported again in place is seen."""
    overrides = {
        **inputs(tmp_path),
        "paths.elmo": None,
        "initialize.components.elmo.options_file": str(tmp_path / "bilm"),
        "training.max_steps": 5,
    }
    out = tmp_path / "runs"
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    assert len(fake_train) == 1
    (tmp_path / "bilm" / "weights.hdf5").write_bytes(b"weights v2")
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    assert len(fake_train) == 2
    assert "reads initialize.components.elmo.options_file changed)" in capsys.readouterr().out


def model_folders(tmp_path: Path, *names: str) -> list:

    runs = []
    for name in names:
        trained_model(tmp_path / name / "seed0" / "model-best", 0, name.encode())
        runs.append(tmp_path / name)
    return runs


def test_two_run_folders_of_one_name_never_share_a_metrics_file(tmp_path, monkeypatch):
    """Issue 37, 6: a/ner_baseline and b/ner_baseline would both be scored into metrics/ner_baseline/seed0.json."""
    from experiments.demo import evaluate_seeds
    from experiments.errors import ExperimentError

    scored = fake_scoring(monkeypatch)
    test = tmp_path / "test.spacy"
    test.write_bytes(b"test")
    a, b = model_folders(tmp_path, "a/ner_baseline", "b/ner_baseline")
    metrics = tmp_path / "metrics"
    with pytest.raises(ExperimentError, match="both named ner_baseline"):
        evaluate_seeds.evaluate_runs(test, metrics, [a, b])
    assert scored == []
    evaluate_seeds.evaluate_runs(test, metrics, [a])
    evaluate_seeds.evaluate_runs(test, metrics, [a])  # scored already
    assert len(scored) == 1
    with pytest.raises(ExperimentError, match="the scores of another run folder"):
        evaluate_seeds.evaluate_runs(test, metrics, [b])
    record = json.loads((metrics / "ner_baseline" / "seed0.json").read_text(encoding="utf-8"))
    assert record[evaluate_seeds.RUN] == a.resolve().as_posix() and len(scored) == 1


def test_a_model_trained_from_data_changed_since_is_refused_not_scored(tmp_path, monkeypatch):
    """The score of a model whose training data changed after train_seeds trained it would be stale."""
    from experiments.demo import evaluate_seeds
    from experiments.errors import ExperimentError

    scored = fake_scoring(monkeypatch)
    (tmp_path / "train.spacy").write_bytes(b"train v1")
    (tmp_path / "test.spacy").write_bytes(b"test")
    model = tmp_path / "runs" / "ner_baseline" / "seed0" / "model-best"
    model.mkdir(parents=True)
    config = tmp_path / "ner.cfg"
    config.write_text(f'[paths]\ntrain = "{tmp_path / "train.spacy"}"\n\n[system]\nseed = 0\n')
    (model.parent / train_seeds_module.TRAINING_FINGERPRINT).write_text(
        json.dumps(run_fingerprint(config, {"system.seed": 0}))
    )
    (model / "config.cfg").write_text(config.read_text())
    evaluate_seeds.evaluate_runs(tmp_path / "test.spacy", tmp_path / "metrics", [model.parent.parent])
    assert len(scored) == 1
    (tmp_path / "train.spacy").write_bytes(b"train v2")
    with pytest.raises(ExperimentError, match="reads paths.train changed since it was trained"):
        evaluate_seeds.evaluate_runs(tmp_path / "test.spacy", tmp_path / "metrics", [model.parent.parent])
    assert len(scored) == 1


def test_with_a_test_split_each_seed_is_an_engine_run_skipped_exactly_while_its_record_is_current(
    tmp_path, fake_train, monkeypatch, capsys
):
    """Each seed is trained, scored and recorded by the engine; its record (beside the seed's folder) is the
    one done-check: unchanged inputs skip it, a changed config file, data file or test split train it again."""
    from experiments.engine.run import is_done, read_record

    scored = fake_scoring(monkeypatch)
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    config = tmp_path / "ner.cfg"
    config.write_text(CONFIG.read_text(encoding="utf-8"), encoding="utf-8")
    test = tmp_path / "test.spacy"
    test.write_bytes(b"test v1")
    out = tmp_path / "training" / "ner_elmo"

    def train(seeds=(0, 1)):
        train_seeds_module.train_seeds(config, out, list(seeds), overrides, test=test)

    def done():
        return [is_done(train_seeds_module.seed_run(config, out, seed, overrides, test), out.parent) for seed in (0, 1)]

    train()
    assert len(fake_train) == 2 and len(scored) == 2 and done() == [True, True]
    record = read_record(out / "seed1.json")
    assert record.run == "ner_elmo/seed1" and record.scores == {"ents_f": 0.5} and record.seed == 1
    assert (out / "seed1" / "model-best" / "config.cfg").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["seed0", "seed0.json", "seed1", "seed1.json"]  # nothing left over
    train()
    assert len(fake_train) == 2 and "skipped" in capsys.readouterr().out  # unchanged: skipped
    config.write_text(CONFIG.read_text(encoding="utf-8").replace("dropout = 0.1", "dropout = 0.2"), encoding="utf-8")
    assert done() == [False, False]
    train([0])
    assert len(fake_train) == 3 and done() == [True, False]
    assert "(config changed)" in capsys.readouterr().out
    (tmp_path / "train.spacy").write_bytes(b"train v2")
    train([0])
    assert len(fake_train) == 4 and "reads paths.train" in capsys.readouterr().out
    test.write_bytes(b"test v2")  # another test split: the kept model is scored again, not trained again
    train([0])
    assert len(fake_train) == 4 and len(scored) == 5 and "scoring it (test changed)" in capsys.readouterr().out
    train()  # seed 1: config and data changed since
    assert len(fake_train) == 5 and done() == [True, True]
    train()
    assert len(fake_train) == 5 and len(scored) == 6


def test_with_a_test_split_a_current_model_trained_without_one_is_scored_not_trained_again(
    tmp_path, fake_train, monkeypatch, capsys
):

    scored = fake_scoring(monkeypatch)
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    test = tmp_path / "test.spacy"
    test.write_bytes(b"test")
    out = tmp_path / "training" / "ner_elmo"
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides)
    assert (out / "seed0" / "model-best").is_dir() and not (out / "seed0.json").exists() and scored == []
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides, test=test)
    assert len(fake_train) == 1 and len(scored) == 1 and (out / "seed0.json").is_file()
    assert "scoring it (no record" in capsys.readouterr().out
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides, test=test)
    assert len(fake_train) == 1 and len(scored) == 1


def test_a_seed_scored_when_it_was_trained_is_not_scored_again_by_evaluate_seeds(tmp_path, fake_train, monkeypatch):
    from experiments.demo import evaluate_seeds
    from experiments.engine.run import read_record

    scored = fake_scoring(monkeypatch)
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    test = tmp_path / "test.spacy"
    test.write_bytes(b"test v1")
    out = tmp_path / "training" / "ner_elmo"
    train_seeds_module.train_seeds(CONFIG, out, [0], overrides, test=test)
    metrics = tmp_path / "metrics"
    evaluate_seeds.evaluate_runs(test, metrics, [out])
    assert len(scored) == 1  # at training only
    view = json.loads((metrics / "ner_elmo" / "seed0.json").read_text(encoding="utf-8"))
    assert view["ents_f"] == 0.5 and view["evaluated"] == read_record(out / "seed0.json").evaluated
    test.write_bytes(b"test v2")  # another test split than the one scored at training
    evaluate_seeds.evaluate_runs(test, metrics, [out])
    assert len(scored) == 2
    (tmp_path / "train.spacy").write_bytes(b"train v2")  # the model is stale: refused, as without --test
    from experiments.errors import ExperimentError

    with pytest.raises(ExperimentError, match="reads paths.train changed since it was trained"):
        evaluate_seeds.evaluate_runs(test, metrics, [out])


def test_an_interrupted_training_is_never_found_as_a_seed_and_never_recorded(tmp_path, monkeypatch):
    """The engine trains in a hidden folder beside the run's place (seed*/model-best, as the reports glob it,
    never finds it), and a kept model is in its place before its record says it is done."""
    import spacy.cli.train

    from experiments.engine import execute as execute_module
    from experiments.engine.run import Run, is_done

    fake_scoring(monkeypatch)
    overrides = inputs(tmp_path)
    test = tmp_path / "test.spacy"
    test.write_bytes(b"test")
    run = Run(id="ner_elmo/seed0", config=str(CONFIG), overrides=tuple(overrides.items()), seed=0, test=str(test))
    work = tmp_path / "training"

    def stopped(config_path, output_path, use_gpu=-1, overrides=None):
        (output_path / "model-best").mkdir(parents=True)  # spaCy saves model-best at its first evaluation
        raise KeyboardInterrupt

    monkeypatch.setattr(spacy.cli.train, "train", stopped)
    with pytest.raises(KeyboardInterrupt):
        execute_module.execute(run, work, work, keep_model=True)
    assert list((work / "ner_elmo").glob("seed*/model-best")) == [] and not is_done(run, work)

    def trained(config_path, output_path, use_gpu=-1, overrides=None):
        (output_path / "model-best").mkdir(parents=True)

    def swap_stopped(partial, final, stale):
        raise KeyboardInterrupt

    monkeypatch.setattr(spacy.cli.train, "train", trained)
    monkeypatch.setattr(execute_module, "swap_into_place", swap_stopped)
    with pytest.raises(KeyboardInterrupt):
        execute_module.execute(run, work, work, keep_model=True)
    assert not is_done(run, work)  # no record of a model that is not in its place


def scoring_fails_once(monkeypatch) -> None:
    """The engine's scoring killed once (out of memory, say), after the new model was swapped into place."""
    from experiments.engine import execute as execute_module

    scoring = execute_module.evaluate

    def killed(nlp, test):
        monkeypatch.setattr(execute_module, "evaluate", scoring)
        raise MemoryError("killed while scoring")

    monkeypatch.setattr(execute_module, "evaluate", killed)


def seeds_with_a_test_split(tmp_path: Path, monkeypatch):
    """train_seeds --test of seed 0 (its fake trainings and scorings noted), and where it keeps the seed."""

    scored = fake_scoring(monkeypatch)
    overrides = {**inputs(tmp_path), "training.max_steps": 5}
    test = tmp_path / "test.spacy"
    test.write_bytes(b"test")
    out = tmp_path / "training" / "ner_elmo"

    def train(with_test: bool = True):
        train_seeds_module.train_seeds(CONFIG, out, [0], overrides, test=test if with_test else None)

    return train, scored, test, out


def record_is_of_the_model_in_place(out: Path) -> bool:
    from experiments.engine.run import digest, read_record

    return read_record(out / "seed0.json").evaluated["model"] == digest(out / "seed0" / "model-best")


def retrained_but_scoring_failed(tmp_path, monkeypatch):
    """A seed trained and scored, then trained again on changed data, its scoring failing after the swap."""
    train, scored, test, out = seeds_with_a_test_split(tmp_path, monkeypatch)
    train()
    (tmp_path / "train.spacy").write_bytes(b"train v2")
    scoring_fails_once(monkeypatch)
    with pytest.raises(MemoryError):
        train()
    return train, scored, test, out


def test_a_model_whose_scoring_failed_after_the_swap_is_scored_next_not_trained_or_refused(
    tmp_path, fake_train, monkeypatch, capsys
):
    """The new model in place beside the record of the one it replaced: that record neither makes it
    look trained from the old data (trained again, refused by evaluate_seeds) nor serves its scores."""
    from experiments.demo import evaluate_seeds

    train, scored, test, out = retrained_but_scoring_failed(tmp_path, monkeypatch)
    assert len(fake_train) == 2 and len(scored) == 1
    evaluate_seeds.evaluate_runs(test, tmp_path / "metrics", [out])  # not "changed since it was trained"
    assert len(scored) == 2
    capsys.readouterr()
    train()
    assert len(fake_train) == 2 and len(scored) == 3 and "scoring it (no record" in capsys.readouterr().out
    assert record_is_of_the_model_in_place(out)


def test_inputs_set_back_after_a_failed_scoring_train_the_seed_again_not_serve_the_old_scores(
    tmp_path, fake_train, monkeypatch
):
    train, scored, test, out = retrained_but_scoring_failed(tmp_path, monkeypatch)
    (tmp_path / "train.spacy").write_bytes(b"train v1")  # the old record's inputs again
    train()
    assert len(fake_train) == 3 and len(scored) == 2  # the model in place was trained from v2
    assert record_is_of_the_model_in_place(out)


def test_a_seed_deleted_and_trained_again_without_a_test_split_is_not_served_its_old_record(
    tmp_path, fake_train, monkeypatch, capsys
):
    import shutil

    train, scored, test, out = seeds_with_a_test_split(tmp_path, monkeypatch)
    train()
    shutil.rmtree(out / "seed0")
    train(with_test=False)  # the same inputs: the old record's fingerprint, another model
    assert len(fake_train) == 2
    capsys.readouterr()
    train()
    assert len(fake_train) == 2 and len(scored) == 2 and "scoring it (no record" in capsys.readouterr().out
    assert record_is_of_the_model_in_place(out)


def test_a_record_of_another_model_vouches_neither_for_its_scores_nor_its_training(
    tmp_path, fake_train, monkeypatch, capsys
):
    """A record beside seed0 that holds another model's digest (a folder put there by hand, or as an older
    version left it when scoring failed) is not the record of the model there."""
    train, scored, test, out = seeds_with_a_test_split(tmp_path, monkeypatch)
    train()
    (out / "seed0" / "model-best" / "model").write_bytes(b"another model")
    capsys.readouterr()
    train()
    assert len(fake_train) == 1 and len(scored) == 2
    assert f"scoring it (no record of {out / 'seed0' / 'model-best'} as it is now)" in capsys.readouterr().out
    assert record_is_of_the_model_in_place(out)
    (out / "seed0" / "model-best" / "model").write_bytes(b"yet another model")
    (out / "seed0" / train_seeds_module.TRAINING_FINGERPRINT).unlink()
    assert train_seeds_module.stored_training_fingerprint(out / "seed0") is None
    train()
    assert len(fake_train) == 2 and record_is_of_the_model_in_place(out)
