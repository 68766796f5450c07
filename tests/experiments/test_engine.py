"""The studies' engine (experiments/engine): a run's fingerprint, its record, the one done-check."""

import json
import shutil
from pathlib import Path

import pytest

from experiments.engine import run as engine
from experiments.engine.execute import accuracy, macro_f
from experiments.engine.run import Run, fingerprint, is_done, read_record, record_path
from experiments.errors import ExperimentError

ROOT = Path(__file__).resolve().parents[2]
BILM = ROOT / "spacy_elmo" / "pretrained" / "elmo-en-small"


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture
def test_split(tmp_path):
    path = tmp_path / "test.spacy"
    path.write_bytes(b"a test split")
    return path


def record_of(the_run: Run, fp: dict, **changes) -> dict:
    run = the_run
    record = {
        "run": run.id,
        "config": run.config,
        "overrides": dict(run.overrides),
        "seed": run.seed,
        "test": run.test,
        "fingerprint": fp,
        "evaluated": {"model": "m", "test": fp["test"]},
        "scores": {"ents_f": 0.5},
        "counts": {"tp": 1, "fp": 1, "fn": 1},
        "train_minutes": 1.0,
        "finished": "2026-11-25T00:00:00+00:00",
    }
    record.update(changes)
    return record


def write(records: Path, run: Run, record: dict) -> None:
    path = record_path(records, run.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")


def test_a_bilm_named_by_options_file_retrained_in_place_makes_the_run_not_done(in_root, tmp_path, test_split):
    """Issue 37, 5: the biLM named only by initialize.components.elmo.options_file is fingerprinted."""
    bilm = tmp_path / "bilm"
    shutil.copytree(BILM, bilm)
    run = Run(
        "s/ner_elmo/seed0",
        "configs/ner_elmo.cfg",
        (("paths.elmo", None), ("initialize.components.elmo.options_file", str(bilm))),
        0,
        str(test_split),
    )
    before = fingerprint(run)
    assert "reads initialize.components.elmo.options_file" in before
    records = tmp_path / "records"
    write(records, run, record_of(run, before))
    assert is_done(run, records)
    with (bilm / "weights.hdf5").open("ab") as file:  # the biLM trained again, in place
        file.write(b"\0")
    assert not is_done(run, records)
    assert engine.changed(before, fingerprint(run)) == ["reads initialize.components.elmo.options_file"]


def test_a_record_whose_score_does_not_follow_from_its_counts_is_not_a_record(tmp_path, in_root, test_split):
    # A score edited by hand was served by the views and `paired`, while `cv` computed another
    # from the counts; the run read as done.
    run = Run("s/ner/seed0", "configs/ner_baseline.cfg", (), 0, str(test_split))
    records = tmp_path / "records"
    write(records, run, record_of(run, fingerprint(run), scores={"ents_f": 0.93}))
    with pytest.raises(ExperimentError, match=r"scores.ents_f is 0.93, but the counts give 0.5"):
        read_record(record_path(records, run.id))
    assert not is_done(run, records)


def test_a_bilm_named_by_a_bare_relative_name_is_fingerprinted_too(tmp_path, monkeypatch, test_split):
    # `options_file = bilm`, a folder in the working directory: no path separator to tell it is one.
    shutil.copytree(BILM, tmp_path / "bilm")
    monkeypatch.chdir(tmp_path)
    run = Run(
        "s/ner_elmo/seed0",
        str(ROOT / "configs" / "ner_elmo.cfg"),
        (("paths.elmo", None), ("initialize.components.elmo.options_file", "bilm")),
        0,
        str(test_split),
    )
    before = fingerprint(run)
    assert "reads initialize.components.elmo.options_file" in before
    with (tmp_path / "bilm" / "weights.hdf5").open("ab") as file:
        file.write(b"\0")
    assert engine.changed(before, fingerprint(run)) == ["reads initialize.components.elmo.options_file"]


def test_the_fingerprint_sees_the_config_the_seed_the_data_and_the_test_split(in_root, tmp_path, test_split):
    train = tmp_path / "train.spacy"
    train.write_bytes(b"train")
    run = Run("s/ner/seed0", "configs/ner_baseline.cfg", (("paths.train", str(train)),), 0, str(test_split))
    base = fingerprint(run)
    assert fingerprint(Run(run.id, run.config, run.overrides, 1, run.test))["config"] != base["config"]
    steps = Run(run.id, run.config, run.overrides + (("training.max_steps", 7),), 0, run.test)
    assert fingerprint(steps)["config"] != base["config"]
    train.write_bytes(b"train, converted again")
    assert fingerprint(run)["reads paths.train"] != base["reads paths.train"]
    test_split.write_bytes(b"another test split")
    assert fingerprint(run)["test"] != base["test"]


def test_a_run_is_done_only_with_a_valid_record_of_itself(in_root, tmp_path, test_split):
    run = Run("a/ner_baseline/seed0", "configs/ner_baseline.cfg", (), 0, str(test_split))
    records = tmp_path / "records"
    assert not is_done(run, records)
    fp = fingerprint(run)
    write(records, run, record_of(run, fp, run="b/ner_baseline/seed0"))  # another run's record
    assert not is_done(run, records)
    write(records, run, record_of(run, fp, counts={"tp": -1, "fp": 0, "fn": 0}))
    assert not is_done(run, records)
    with pytest.raises(ExperimentError, match="whole numbers"):
        read_record(record_path(records, run.id))
    record_path(records, run.id).write_text('{"run": "a/ner_', encoding="utf-8")  # cut short
    assert not is_done(run, records)
    write(records, run, record_of(run, fp))
    assert is_done(run, records)


def test_two_runs_with_the_same_folder_name_keep_two_records(tmp_path):
    """Issue 37, 6: records are named by the whole run id, not the run folder's last name."""
    a = Run("a/ner_baseline/seed0", "c.cfg", (), 0, "t")
    b = Run("b/ner_baseline/seed0", "c.cfg", (), 0, "t")
    assert record_path(tmp_path, a.id) != record_path(tmp_path, b.id)


@pytest.mark.parametrize("bad", ["", "/abs/run", "a/../b", "./a"])
def test_a_run_id_is_a_plain_relative_path(bad):
    with pytest.raises(ExperimentError, match="relative path"):
        Run(bad, "c.cfg", (), 0, "t")


def test_a_run_survives_its_trip_through_the_command_line():
    run = Run(
        "cv/ner/elmo/fold0/seed1",
        "configs/ner_elmo.cfg",
        (("paths.elmo", "x"), ("training.max_steps", 3)),
        1,
        "t.spacy",
        ("folds.json",),
        {"fold": "0"},
    )
    again = Run.from_json(run.to_json())
    assert again == run and again.labels == run.labels and again.settings == {**dict(run.overrides), "system.seed": 1}


def test_scores_from_a_confusion_matrix():
    matrix = [[3, 1, 0], [0, 2, 2], [0, 0, 0]]  # gold rows, predicted columns; class 2 never right
    f = [2 * 3 / (6 + 1), 2 * 2 / (4 + 1 + 2), 0.0]
    assert macro_f(matrix) == pytest.approx(sum(f) / 3, rel=1e-12)
    assert accuracy(matrix) == pytest.approx(5 / 8, rel=1e-12)


def test_a_second_runner_on_the_same_work_folder_is_refused(tmp_path):
    from experiments.engine.plan import work_lock

    with work_lock(tmp_path / "work"):
        with pytest.raises(ExperimentError, match="no other runner training here"):
            with work_lock(tmp_path / "work"):
                pass
    with work_lock(tmp_path / "work"):  # free again once the first is done
        pass


def test_per_seed_score_files_are_views_of_the_records_that_the_paired_report_reads(tmp_path):
    from experiments.engine.run import RunRecord, write_record
    from experiments.engine.views import write_views
    from experiments.report.paired import scores

    records, metrics = tmp_path / "records", tmp_path / "metrics"
    for seed, (f, fp) in ((0, (0.5, 2)), (1, (0.25, 6))):  # F1 = 2 tp / (2 tp + fp + fn)
        write_record(
            records,
            RunRecord(
                run=f"ner_elmo/seed{seed}",
                config="c",
                overrides={},
                seed=seed,
                test="t",
                fingerprint={},
                evaluated={"model": "m", "test": "t"},
                scores={"ents_f": f},
                counts={"tp": 1, "fp": fp, "fn": 0},
                train_minutes=1.0,
                finished="x",
            ),
        )
    ids = ["ner_elmo/seed0", "ner_elmo/seed1", "ner_elmo/seed2"]  # seed 2 has no record yet: no view
    assert len(write_views(records, metrics, ids)) == 2
    assert scores(metrics / "ner_elmo", "ents_f") == {"seed0": 50.0, "seed1": 25.0}
    assert write_views(records, metrics, ids) == []  # unchanged: not rewritten
    with pytest.raises(ExperimentError, match="<run>/seed<N>"):
        write_views(records, metrics, ["ner_elmo"])


def test_a_model_card_edited_does_not_retrain_but_new_weights_do(in_root, tmp_path, test_split):
    bilm = tmp_path / "bilm"
    shutil.copytree(BILM, bilm)
    (bilm / "README.md").write_text("the card\n", encoding="utf-8")
    run = Run("s/ner_elmo/seed0", "configs/ner_elmo.cfg", (("paths.elmo", str(bilm)),), 0, str(test_split))
    before = fingerprint(run)
    (bilm / "README.md").write_text("the card, rewritten\n", encoding="utf-8")
    assert fingerprint(run) == before
    (bilm / "options.json").write_text((bilm / "options.json").read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert engine.changed(before, fingerprint(run)) == [
        "reads initialize.components.elmo.options_file",
        "reads paths.elmo",
    ]


def test_the_training_part_of_a_fingerprint_is_what_the_training_reads(in_root, tmp_path, test_split):
    from experiments.engine.run import config_fingerprint, training_part

    folds = tmp_path / "folds.json"
    folds.write_text("{}", encoding="utf-8")
    run = Run("cv/ner/fold0/seed0", "configs/ner_baseline.cfg", (), 0, str(test_split), (str(folds),))
    whole = fingerprint(run)
    assert training_part(whole) == config_fingerprint(run.config, run.settings)
    assert sorted(set(whole) - set(training_part(whole))) == [f"input {folds}", "test"]
