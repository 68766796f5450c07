"""What the cross-validation report (experiments/studies/cv.py, experiments/report/cv.py) reads and where it writes
(issue 46: D3, D4, D9)."""

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from experiments.engine.run import RunRecord, stored_record, write_record
from experiments.errors import ExperimentError
from experiments.report import cv as report
from experiments.studies import cv

ROOT = Path(__file__).resolve().parents[2]
# Folder names of this test's outputs: the report must write them under the caller's folder, never the project's.
OURS = ("cv-caller-records", "cv-caller-output")
NER = ("--k", "3", "--seeds", "0", "--tasks", "ner", "--arms", "baseline,elmo")


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The caller's folder, outside the project; fails the test if anything landed in the project instead."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    strays = [ROOT / name for name in OURS if (ROOT / name).exists()]
    for stray in strays:
        shutil.rmtree(stray)
    assert not strays, f"written into the project: {strays}"


def ner_record(run_id: str, tp: int, minutes=1.0) -> RunRecord:
    return RunRecord(
        run=run_id,
        config="c",
        overrides={},
        seed=0,
        test="t",
        fingerprint={},
        evaluated={},
        scores={},
        counts={"tp": tp, "fp": 5, "fn": 5},
        train_minutes=minutes,
        finished="x",
    )


def textcat_record(run_id: str, labels, confusion) -> RunRecord:
    return RunRecord(
        run=run_id,
        config="c",
        overrides={},
        seed=0,
        test="t",
        fingerprint={},
        evaluated={},
        scores={},
        counts={"labels": labels, "confusion": confusion},
        train_minutes=1.0,
        finished="x",
    )


def ner_study(records: Path, seeds=(0,)) -> cv.Study:
    return cv.Study(k=3, seeds=seeds, tasks=("ner",), arms=("baseline", "elmo"), records=str(records))


def write_ner_records(records: Path, seeds=(0,), baseline_fp: int = 5) -> list:
    """A record of every planned run of a 3-fold NER study, ELMo 2 true positives ahead."""
    runs = cv.plan_runs(ner_study(records, seeds))
    for run in runs:
        tp = 10 + int(run.labels["fold"]) + (2 if run.labels["arm"] == "elmo" else 0)
        record = ner_record(run.id, tp)
        if run.labels["arm"] == "baseline":
            record = record.model_copy(update={"counts": {"tp": tp, "fp": baseline_fp, "fn": baseline_fp}})
        write_record(records, record)
    return runs


def invoke(*args: str):
    return CliRunner().invoke(cv.app, list(args))


def test_the_report_reads_and_writes_its_paths_from_the_callers_folder(elsewhere):
    records, output = OURS
    write_ner_records(elsewhere / records)
    result = invoke("report", *NER, "--records", records, "--output", output)
    assert result.exit_code == 0, result.output
    assert '"pairs": 3' in (elsewhere / output / "results.json").read_text(encoding="utf-8")
    markdown = (elsewhere / output / "results.md").read_text(encoding="utf-8")
    assert "| ner | baseline → elmo | f1 | 3 of 3 |" in markdown


@pytest.mark.parametrize(
    "records,found", [("docs/results/cv/recrods", "found nothing"), ("a-file", "found a file"), ("empty", "found none")]
)
def test_a_records_folder_that_is_not_one_is_refused_and_nothing_written(elsewhere, records, found):
    (elsewhere / "empty").mkdir()
    (elsewhere / "a-file").write_text("x", encoding="utf-8")
    output = elsewhere / OURS[1]
    output.mkdir()
    (output / "results.json").write_text("the committed results\n", encoding="utf-8")
    result = invoke("report", *NER, "--records", records, "--output", OURS[1])
    assert isinstance(result.exception, ExperimentError) and result.exception.where == str(elsewhere / records)
    assert found in str(result.exception)
    assert sorted(p.name for p in output.iterdir()) == ["results.json"]
    assert (output / "results.json").read_text(encoding="utf-8") == "the committed results\n"


def test_the_run_command_takes_its_paths_from_the_callers_folder(elsewhere, monkeypatch):
    given = {}

    def fake_run_plan(runs, records, work, logs, jobs, minutes):
        given.update(
            records=Path(records).resolve(),
            work=Path(work).resolve(),
            logs=Path(logs).resolve(),
            bilm=dict(runs[1].overrides)["paths.elmo"],
        )
        return SimpleNamespace(describe=lambda: "done", ok=True)

    monkeypatch.setattr(cv, "prepare", lambda study: study)
    monkeypatch.setattr(cv, "run_plan", fake_run_plan)
    result = invoke("run", *NER, "--records", "recs", "--work", "w", "--logs", "l", "--bilm", str(ROOT / cv.BILM))
    assert result.exit_code == 0, result.output
    assert given == {
        "records": elsewhere / "recs",
        "work": elsewhere / "w",
        "logs": elsewhere / "l",
        "bilm": cv.BILM,
    }  # a path inside the project reads as the study names it: same fingerprint


def test_a_record_copied_over_another_runs_is_refused_by_the_report_as_by_the_done_check(tmp_path):
    runs = write_ner_records(tmp_path)
    by_id = {run.id: run for run in runs}
    copied = ner_record("ner/baseline/fold1/seed0", 99)
    target = by_id["ner/baseline/fold0/seed0"]
    (tmp_path / f"{target.id}.json").write_text(copied.model_dump_json(), encoding="utf-8")
    assert stored_record(tmp_path, target) is None  # the engine: not done
    with pytest.raises(ExperimentError, match="the record of run ner/baseline/fold1/seed0") as caught:
        report.build(runs, tmp_path, cv.COMPARISONS)
    assert caught.value.where.endswith("ner/baseline/fold0/seed0.json")


def test_runs_not_timed_are_counted_apart_from_the_minutes(tmp_path):
    runs = write_ner_records(tmp_path)
    write_record(tmp_path, ner_record(runs[0].id, 10, minutes=None))  # scored from a model trained earlier
    built = report.build(runs, tmp_path, cv.COMPARISONS)
    arm = built["arms"]["ner/baseline"]
    assert arm["train_minutes"] == pytest.approx(2.0, rel=1e-12) and arm["untimed"] == 1
    (row,) = [line for line in report.markdown(built).splitlines() if line.startswith("| ner/baseline |")]
    assert row.startswith("| ner/baseline | 3 of 3 |") and row.endswith("| 2 (1 untimed) |")


def test_confusion_matrices_with_the_classes_in_another_order_are_pooled_class_by_class():
    a = textcat_record("s/a", ["pos", "neg", "mid"], [[3, 1, 0], [0, 2, 1], [1, 0, 4]])
    order = [2, 0, 1]  # the same counts, the classes listed as mid, pos, neg
    b = textcat_record("s/b", ["mid", "pos", "neg"], [[a.counts["confusion"][i][j] for j in order] for i in order])
    assert report.sum_counts([a, b]) == {
        "labels": ["pos", "neg", "mid"],
        "confusion": [[6, 2, 0], [0, 4, 2], [2, 0, 8]],
    }
    assert report.metrics_of(report.sum_counts([b, a]))["macro_f"] == pytest.approx(
        report.metrics_of(report.sum_counts([a, a]))["macro_f"], rel=1e-12
    )
    other = textcat_record("s/c", ["pos", "neg", "other"], a.counts["confusion"])
    with pytest.raises(ExperimentError, match="pos, neg, mid"):
        report.sum_counts([a, other])


def test_the_readme_block_against_a_perfect_arm_says_the_error_reduction_is_undefined(tmp_path):
    runs = write_ner_records(tmp_path, seeds=(0, 1), baseline_fp=0)  # baseline: no false positive or negative
    built = report.build(runs, tmp_path, cv.COMPARISONS)
    (comparison,) = built["comparisons"]
    assert comparison["score_a"] == pytest.approx(100.0, rel=1e-12) and comparison["relative_error_reduction"] is None
    row = next(line for line in report.readme_block(built, "2026-01-02").splitlines() if "baseline → elmo" in line)
    assert row.split(" | ")[-2] == "n/a"


@pytest.mark.parametrize("readme", ["missing.md", "plain.md"])
def test_a_readme_without_the_block_is_refused_before_anything_is_written(elsewhere, readme):
    records, output = OURS
    write_ner_records(elsewhere / records)
    (elsewhere / "plain.md").write_text("no block\n", encoding="utf-8")
    result = invoke("report", *NER, "--records", records, "--output", output, "--readme", readme)
    assert isinstance(result.exception, ExperimentError) and result.exception.where == str(elsewhere / readme)
    assert not (elsewhere / output).exists()
    assert (elsewhere / "plain.md").read_text(encoding="utf-8") == "no block\n"
