"""The `full` workflow's report (experiments/report/v2eval.py): every comparison paired by seed,
the ones not run listed, nothing left out silently."""

import json

import pytest
import typer

from experiments.report import v2eval


def write_scores(metrics, run, key, values):
    folder = metrics / run
    folder.mkdir(parents=True)
    for seed, value in enumerate(values):
        (folder / f"seed{seed}.json").write_text(json.dumps({key: value / 100.0}))


def test_the_report_pairs_each_comparison_by_seed_and_lists_what_was_not_run(tmp_path):
    metrics = tmp_path / "metrics"
    write_scores(metrics, "ner_baseline_converged", "ents_f", [40.0, 50.0, 45.0])
    write_scores(metrics, "ner_elmo_v2_converged", "ents_f", [42.0, 51.0, 48.0])
    v2eval.main(metrics=metrics, training=tmp_path / "training", output=tmp_path / "report")
    report = json.loads((tmp_path / "report" / "results.json").read_text())
    (row,) = report["comparisons"]
    assert row["run"] == "elmo_v2_converged" and row["reference"] == "baseline_converged"
    assert row["gain"]["absolute"] == pytest.approx(2.0, rel=1e-9)  # (2 + 1 + 3) / 3, paired by seed
    assert row["gain"]["pairs"] == 3
    # error 55 → 53: 100 · 2 / 55
    assert row["gain"]["relative_error_reduction"] == pytest.approx(100 * 2 / 55, rel=1e-9)
    text = (tmp_path / "report" / "results.md").read_text()
    assert "45.00 ± 5.00 → 47.00 ± 4.58" in text and "+2.00" in text
    assert "Not run yet" in text and "ner_elmo_v2_finetuned against ner_elmo_v2" in text
    assert len(report["not_run"]) == len(set(report["not_run"]))  # once per task, not once per score
    assert "sentiment5_elmo_v2_tuned_reviews against sentiment5_baseline" in text


def test_a_report_with_nothing_scored_is_refused(tmp_path):
    with pytest.raises(typer.BadParameter, match="run experiments.studies.v2eval first"):
        v2eval.main(metrics=tmp_path / "metrics", training=tmp_path / "training", output=tmp_path / "report")
    assert not (tmp_path / "report" / "results.md").exists()
