"""What the engine (experiments/engine) refuses: records that are not records, runs that are not runs,
run ids that leave their folders (issue 46: D6, D9, D13, D19)."""

import json
from pathlib import Path

import pytest
import typer

from experiments.engine import execute
from experiments.engine.run import Run, read_record, record_path, stored_record
from experiments.engine.views import write_views
from experiments.errors import ExperimentError, run_app

RUN = Run("ner/baseline/fold0/seed0", "configs/ner_baseline.cfg", (), 0, "test.spacy")
TEXTCAT = Run("sentiment5/baseline/fold0/seed0", "configs/textcat_baseline.cfg", (), 0, "test.spacy")


def record_text(of: Run, **changes) -> str:
    """A valid NER record of the run ``of`` (F1 0.5 from its counts) with ``changes``, as JSON text."""
    record = {
        "run": of.id,
        "config": of.config,
        "overrides": {},
        "seed": of.seed,
        "test": of.test,
        "fingerprint": {},
        "evaluated": {"model": "m", "test": "t"},
        "scores": {"ents_f": 0.5},
        "counts": {"tp": 1, "fp": 1, "fn": 1},
        "train_minutes": 1.0,
        "finished": "2026-11-27T00:00:00+00:00",
    }
    record.update(changes)
    return json.dumps(record)


def textcat_text(of: Run, labels, confusion, **scores) -> str:
    return record_text(of, scores=scores, counts={"labels": labels, "confusion": confusion})


def put(records: Path, run: Run, text: str) -> Path:
    path = record_path(records, run.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_not_a_record(records: Path, run: Run, text: str, match: str) -> None:
    """Reading the file is an ExperimentError that names it, and the done-check treats the run as not done."""
    path = put(records, run, text)
    with pytest.raises(ExperimentError, match=match) as caught:
        read_record(path)
    assert caught.value.where == str(path)
    assert stored_record(records, run) is None


def test_a_valid_record_is_read(tmp_path):
    put(tmp_path, RUN, record_text(RUN))
    assert stored_record(tmp_path, RUN).counts == {"tp": 1, "fp": 1, "fn": 1}
    put(tmp_path, TEXTCAT, textcat_text(TEXTCAT, ["a", "b"], [[3, 1], [0, 2]], cats_accuracy=5 / 6))
    assert stored_record(tmp_path, TEXTCAT).counts["labels"] == ["a", "b"]


@pytest.mark.parametrize("score", ["NaN", "-Infinity"])
def test_a_score_that_is_not_a_finite_number_is_not_a_record(tmp_path, score):
    # JSON's NaN compared with the counts' score: abs(0.5 - NaN) > 1e-9 is False, so NaN passed.
    text = record_text(RUN).replace('"ents_f": 0.5', f'"ents_f": {score}')
    assert_not_a_record(tmp_path, RUN, text, "scores.ents_f")


def test_a_textcat_accuracy_that_is_not_its_counts_is_not_a_record(tmp_path):
    matrix = [[3, 1], [0, 2]]
    text = textcat_text(TEXTCAT, ["a", "b"], matrix, cats_accuracy=0.0).replace("0.0", "NaN")
    assert_not_a_record(tmp_path, TEXTCAT, text, "scores.cats_accuracy")
    assert_not_a_record(
        tmp_path, TEXTCAT, textcat_text(TEXTCAT, ["a", "b"], matrix, cats_accuracy=0.9), "scores.cats_accuracy"
    )


def test_training_minutes_that_are_not_a_finite_number_are_not_a_record(tmp_path):
    assert_not_a_record(
        tmp_path, RUN, record_text(RUN).replace('"train_minutes": 1.0', '"train_minutes": NaN'), "train_minutes"
    )


@pytest.mark.parametrize(
    "labels,confusion,match",
    [
        (["a", "b"], 5, "square"),  # not a list: TypeError in the validator
        (["a", "b"], [1, 2], "square"),  # rows that are not lists
        ([], [], "at least one"),  # empty: ZeroDivisionError in macro_f
        (["a", "a"], [[1, 0], [0, 1]], "each once"),
        (["a", 2], [[1, 0], [0, 1]], "names"),
    ],
)
def test_a_confusion_matrix_that_is_not_one_is_not_a_record(tmp_path, labels, confusion, match):
    assert_not_a_record(tmp_path, TEXTCAT, textcat_text(TEXTCAT, labels, confusion), match)


@pytest.mark.parametrize(
    "text,found",
    [
        ("{not json", "the top level"),
        (json.dumps({"id": "a/seed0", "overrides": [], "seed": 0, "test": "t", "inputs": []}), "config"),
        (json.dumps({**json.loads(RUN.to_json()), "overrides": "x"}), "overrides"),
        (json.dumps({**json.loads(RUN.to_json()), "id": "../a"}), "'../a'"),
    ],
)
def test_a_run_that_is_not_one_is_refused_in_one_line(text, found, capsys):
    with pytest.raises(ExperimentError, match=found):
        Run.from_json(text)
    app = typer.Typer(add_completion=False)
    app.command()(execute.main)
    with pytest.raises(SystemExit) as exit:
        run_app(app, ["records", "work", "--run", text])
    assert exit.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1


@pytest.mark.parametrize(
    "run_id", ["../outside/seed0", "ner/../../outside/seed0", "/outside/seed0", "ner/./seed0", "ner//seed0"]
)
def test_a_view_is_refused_for_a_run_id_that_is_not_a_plain_path(tmp_path, run_id):
    records, metrics = tmp_path / "records", tmp_path / "metrics"
    # "../outside/seed0": its record and its view would be one file outside both folders, the record overwritten.
    outside = tmp_path / "outside" / "seed0.json"
    outside.parent.mkdir()
    outside.write_text(record_text(RUN, run="outside/seed0"), encoding="utf-8")
    before = outside.read_bytes()
    with pytest.raises(ExperimentError, match="relative path"):
        write_views(records, metrics, ["ner/baseline/seed0", run_id])
    assert outside.read_bytes() == before
    assert not metrics.exists()
