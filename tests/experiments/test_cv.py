"""The cross-validation study (experiments/studies/cv.py) and its report (experiments/report/cv.py) on tiny data."""

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.tokens import DocBin

from experiments.engine.execute import execute, scratch
from experiments.engine.run import RunRecord, is_done, record_path
from experiments.errors import ExperimentError
from experiments.report import cv as report
from experiments.studies import cv

ROOT = Path(__file__).resolve().parents[2]
N_TWEETS = 23


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A 23-tweet NER source and a study of 4 folds over it, all under tmp_path; run from the project folder."""
    lines = []
    for i in range(N_TWEETS):
        lines += [f"tweet{i}\tO", "meets\tO", f"Alice{i % 3}\tB-person", "in\tO", "Paris\tB-geo-loc", "\t"]
    source = tmp_path / "ner.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setitem(cv.TASKS, "ner", cv.Task(str(source), "ner", "ner", ("baseline", "elmo"), False))
    monkeypatch.chdir(ROOT)
    return cv.Study(
        k=4,
        seeds=(0,),
        steps=4,
        eval_frequency=2,
        tasks=("ner",),
        arms=("baseline",),
        records=str(tmp_path / "records"),
        folds=str(tmp_path / "folds"),
        corpus=str(tmp_path / "corpus"),
    )


def texts(path: Path) -> list:
    return [doc.text for doc in DocBin().from_disk(path).get_docs(spacy.blank("en").vocab)]


@pytest.mark.parametrize("n,k", [(23, 4), (40, 10), (10, 10)])
def test_folds_partition_the_data_into_near_equal_parts(n, k):
    fold_of = cv.assign_folds(n, k, seed=0)
    sizes = Counter(fold_of)
    assert sorted(sizes) == list(range(k)) and sum(sizes.values()) == n
    assert max(sizes.values()) - min(sizes.values()) <= 1
    assert cv.assign_folds(n, k, seed=0) == fold_of and cv.assign_folds(n, k, seed=1) != fold_of


def test_stratified_folds_hold_each_class_in_its_share():
    labels = ["a"] * 30 + ["b"] * 10 + ["c"] * 20
    fold_of = cv.assign_folds(len(labels), 10, seed=3, strata=labels)
    for fold in range(10):
        held = Counter(label for label, f in zip(labels, fold_of) if f == fold)
        assert held == {"a": 3, "b": 1, "c": 2}


def test_each_split_tests_on_one_fold_picks_on_the_next_and_trains_on_the_rest():
    for fold in range(5):
        split = cv.split_of(fold, 5)
        assert split["test"] == [fold] and split["dev"] == [(fold + 1) % 5]
        assert sorted(split["train"] + split["dev"] + split["test"]) == list(range(5))


def test_no_example_is_both_trained_on_and_tested_in_one_run(tiny):
    cv.write_folds(tiny, "ner")
    tested = []
    for fold in range(tiny.k):
        folder = cv.split_dir(tiny, "ner", fold)
        train, dev, test = (set(texts(folder / f"{name}.spacy")) for name in ("train", "dev", "test"))
        assert not train & test and not train & dev and not dev & test
        assert len(train | dev | test) == N_TWEETS
        tested += sorted(test)
    assert sorted(tested) == sorted(set(tested)) and len(tested) == N_TWEETS  # each tweet tested once


def test_the_folds_are_cut_once_and_a_changed_source_is_refused(tiny):
    cv.write_folds(tiny, "ner")
    stored = json.loads(cv.folds_path(tiny, "ner").read_text(encoding="utf-8"))
    assert stored["k"] == 4 and len(stored["fold_of"]) == N_TWEETS
    cv.write_folds(tiny, "ner")  # read back, not cut again
    assert json.loads(cv.folds_path(tiny, "ner").read_text(encoding="utf-8")) == stored
    with pytest.raises(ExperimentError, match="remove it to cut the folds again"):
        cv.write_folds(cv.Study(**{**tiny.__dict__, "k": 5}), "ner")


def test_every_arm_runs_the_same_folds_and_seeds_fold_by_fold():
    runs = cv.plan_runs(cv.Study(k=3, seeds=(0, 1)))
    core = [run.id for run in runs[:8]]
    assert core == [
        "ner/baseline/fold0/seed0",
        "ner/elmo/fold0/seed0",
        "sentiment5/baseline/fold0/seed0",
        "sentiment5/elmo/fold0/seed0",
        "ner/baseline/fold0/seed1",
        "ner/elmo/fold0/seed1",
        "sentiment5/baseline/fold0/seed1",
        "sentiment5/elmo/fold0/seed1",
    ]
    assert len(runs) == 3 * 2 * 6 and all("glove" in run.id for run in runs[-12:])
    by_id = {run.id: run for run in runs}
    for fold, seed in itertools.product(range(3), (0, 1)):
        pair = [by_id[f"ner/{arm}/fold{fold}/seed{seed}"] for arm in ("baseline", "elmo", "glove", "glove_elmo")]
        assert len({(dict(r.overrides)["paths.train"], r.test, r.seed) for r in pair}) == 1
    elmo = dict(by_id["ner/glove_elmo/fold0/seed0"].overrides)
    assert elmo["paths.elmo"] == cv.BILM and elmo["components.ner.model.tok2vec.embed.include_static_vectors"] is True


def test_the_int8_arm_is_planned_only_when_named_and_paired_fold_by_fold():
    assert not any("elmo_int8" in run.id for run in cv.plan_runs(cv.Study(k=3, seeds=(0, 1))))
    runs = cv.plan_runs(cv.Study(k=3, seeds=(0,), tasks=("ner",), arms=("elmo", "elmo_int8")))
    assert [run.id for run in runs] == [f"ner/{arm}/fold{f}/seed0" for f in range(3) for arm in ("elmo", "elmo_int8")]
    for fold in range(3):
        fp32, int8 = (dict(run.overrides) for run in runs[2 * fold : 2 * fold + 2])
        assert int8 == {**fp32, "components.elmo.model.precision": "int8-always"}  # all else the same
    # With the other arms, a run in two comparisons is planned once.
    both = cv.plan_runs(cv.Study(k=3, seeds=(0,), tasks=("ner",), arms=("baseline", "elmo", "elmo_int8")))
    assert len(both) == len({run.id for run in both}) == 9


def test_a_trained_run_is_done_until_its_fold_assignment_changes(tiny, tmp_path):
    cv.write_folds(tiny, "ner")
    run = cv.plan_runs(tiny)[0]
    records = Path(tiny.records)
    execute(run, records, tmp_path / "work")
    record = RunRecord.model_validate_json(record_path(records, run.id).read_text(encoding="utf-8"))
    assert set(record.counts) == {"tp", "fp", "fn"} and record.counts["tp"] + record.counts["fn"] == 2 * 6
    assert record.scores["ents_f"] == pytest.approx(report.metrics_of(record.counts)["f1"] / 100, rel=1e-12)
    assert not scratch(tmp_path / "work", run.id, "partial").exists() and not (tmp_path / "work" / run.id).exists()
    assert is_done(run, records)
    # Another assignment: two tweets of folds 0 and 2 swap places.
    path = cv.folds_path(tiny, "ner")
    stored = json.loads(path.read_text(encoding="utf-8"))
    i, j = stored["fold_of"].index(0), stored["fold_of"].index(2)
    stored["fold_of"][i], stored["fold_of"][j] = 2, 0
    path.write_text(json.dumps(stored), encoding="utf-8")
    assert not is_done(run, records)
    cv.write_folds(tiny, "ner")
    assert not is_done(run, records)


def test_the_comparison_takes_its_p_from_the_one_sign_flip_test():
    # Up to 16 pairs exact (no error stated); beyond, the seeded Monte-Carlo estimate with its error.
    from experiments.report.comparison import sign_flip_test

    for n in (5, 17):
        d = numpy.random.default_rng(n).normal(0.3, 1.0, size=n)
        a = [fake_record(f"a{i}", 10, 5, 5) for i in range(n)]
        b = [fake_record(f"b{i}", 20 + int(round(x * 10)), 5, 5) for i, x in enumerate(d)]  # pairs that differ
        differences = [report.metrics_of(rb.counts)["f1"] - report.metrics_of(ra.counts)["f1"] for ra, rb in zip(a, b)]
        expected = sign_flip_test(numpy.asarray(differences))
        got = report.compare(a, b, "f1", draws=100)
        assert got["p"] == expected["sign_flip_p"]
        assert got["p_error"] == (None if n <= 16 else expected["sign_flip_se"])


def fake_record(run_id: str, tp: int, fp: int, fn: int) -> RunRecord:
    return RunRecord(
        run=run_id,
        config="c",
        overrides={},
        seed=0,
        test="t",
        fingerprint={},
        evaluated={},
        scores={},
        counts={"tp": tp, "fp": fp, "fn": fn},
        train_minutes=1.0,
        finished="x",
    )


def test_a_comparison_pools_counts_and_pairs_runs():
    a = [fake_record("a0", 5, 5, 5), fake_record("a1", 1, 3, 3)]
    b = [fake_record("b0", 6, 4, 4), fake_record("b1", 3, 1, 1)]
    result = report.compare(a, b, "f1", draws=200)
    pooled_a, pooled_b = 100 * 12 / (12 + 8 + 8), 100 * 18 / (18 + 5 + 5)
    assert result["score_a"] == pytest.approx(pooled_a) and result["gain"] == pytest.approx(pooled_b - pooled_a)
    assert result["relative_error_reduction"] == pytest.approx((pooled_b - pooled_a) / (100 - pooled_a))
    assert result["interval"][0] <= result["gain"] <= result["interval"][1]
    assert result["p"] == pytest.approx(0.5) and result["p_error"] is None  # 2 pairs, both up: 2 of 4 patterns


def test_an_elmo_run_records_its_learned_layer_mix_and_the_split_sizes(tiny, tmp_path):
    study = cv.Study(**{**tiny.__dict__, "arms": ("elmo",), "steps": 2, "eval_frequency": 1})
    cv.write_folds(study, "ner")
    run = cv.plan_runs(study)[0]
    assert run.id == "ner/elmo/fold0/seed0"
    execute(run, Path(study.records), tmp_path / "work")
    record = RunRecord.model_validate_json(record_path(Path(study.records), run.id).read_text(encoding="utf-8"))
    weights = record.mixes["ner"]["weights"]
    assert len(weights) == 3 and sum(weights) == pytest.approx(1.0, rel=1e-6)
    assert record.sizes == {"test": 6, "train": N_TWEETS - 6 - 6}


def test_the_report_pairs_finished_runs_by_fold_and_seed_and_says_when_it_is_partial(tmp_path):
    from experiments.engine.run import write_record

    study = cv.Study(k=3, seeds=(0, 1), tasks=("ner",), arms=("baseline", "elmo"), records=str(tmp_path / "r"))
    runs = cv.plan_runs(study)
    for run in runs:
        fold, arm = int(run.labels["fold"]), run.labels["arm"]
        if run.labels["seed"] == "1" and fold == 2 and arm == "elmo":
            continue  # not run yet: its baseline has no partner
        tp = 10 + fold + (2 if arm == "elmo" else 0)
        write_record(Path(study.records), fake_record(run.id, tp, 5, 5).model_copy(update={"cpu": "a CPU"}))
    built = report.build(runs, Path(study.records), cv.COMPARISONS)
    (comparison,) = built["comparisons"]
    assert comparison["pairs"] == 5 and comparison["planned_pairs"] == 6
    assert "fold2/seed1" not in comparison["pair_keys"] and comparison["gain"] > 0
    assert built["arms"]["ner/baseline"]["done"] == 6 and built["arms"]["ner/elmo"]["done"] == 5
    text = report.markdown(built)
    assert "**Partial**" in text and "| ner | baseline → elmo | f1 | 5 of 6 |" in text and "a CPU" in text
    # Each fold's row: the mean of its paired runs' own scores (fold 2: seed 0 alone).
    f1 = lambda tp: 100 * 2 * tp / (2 * tp + 5 + 5)  # noqa: E731
    assert f"| 0 | 2 | {f1(10):.2f} | {f1(12):.2f} | {f1(12) - f1(10):+.2f} |" in text
    assert f"| 2 | 1 | {f1(12):.2f} | {f1(14):.2f} | {f1(14) - f1(12):+.2f} |" in text


def test_one_pair_gives_a_gain_but_no_interval_and_no_test(tmp_path):
    from experiments.engine.run import write_record

    study = cv.Study(k=3, seeds=(0,), tasks=("ner",), arms=("baseline", "elmo"), records=str(tmp_path / "r"))
    runs = cv.plan_runs(study)[:2]
    for run, tp in zip(runs, (10, 12)):
        write_record(Path(study.records), fake_record(run.id, tp, 5, 5))
    (comparison,) = report.build(cv.plan_runs(study), Path(study.records), cv.COMPARISONS)["comparisons"]
    assert comparison["pairs"] == 1 and comparison["gain"] > 0
    assert comparison["interval"] is None and comparison["p"] is None
    assert "(one pair: no interval)" in report.markdown(report.build(runs, Path(study.records), cv.COMPARISONS))


def test_an_arm_can_be_read_from_another_studys_records(tmp_path):
    from experiments.engine.run import write_record

    study = cv.Study(k=3, seeds=(0,), tasks=("ner",), arms=("elmo", "elmo_int8"), records=str(tmp_path / "int8"))
    elsewhere = tmp_path / "cv"
    for run in cv.plan_runs(study):
        fp32 = run.labels["arm"] == "elmo"
        write_record(elsewhere if fp32 else Path(study.records), fake_record(run.id, 10 if fp32 else 11, 5, 5))
    runs = cv.plan_runs(study)
    (alone,) = report.build(runs, Path(study.records), cv.COMPARISONS)["comparisons"]
    assert alone["pairs"] == 0  # no float32 record in the study's own folder
    built = report.build(runs, Path(study.records), cv.COMPARISONS, {"elmo": elsewhere})
    (paired,) = built["comparisons"]
    assert paired["pairs"] == 3 and paired["gain"] > 0
    with pytest.raises(ExperimentError, match="records of the planned runs"):
        report.build(runs, Path(study.records), cv.COMPARISONS, {"elmo": tmp_path / "int8"})  # none there
    out = tmp_path / "page"
    report.write_report(runs, Path(study.records), out, cv.COMPARISONS, None, "", {"elmo": elsewhere}, "Made so.")
    assert (out / "results.md").read_text(encoding="utf-8").rstrip().endswith("Made so.")


def test_the_readme_block_reports_complete_comparisons_and_says_what_is_left(tmp_path):
    from experiments.engine.run import write_record
    from experiments.errors import ExperimentError

    study = cv.Study(
        k=3, seeds=(0, 1), tasks=("ner",), arms=("baseline", "elmo", "glove", "glove_elmo"), records=str(tmp_path / "r")
    )
    runs = cv.plan_runs(study)
    for run in runs:
        fold, arm = int(run.labels["fold"]), run.labels["arm"]
        if arm == "glove_elmo" and fold > 0:
            continue  # this comparison is not complete
        tp = 10 + fold + int(run.labels["seed"]) + (3 if arm in ("elmo", "glove_elmo") else 0)
        write_record(Path(study.records), fake_record(run.id, tp, 5, 5).model_copy(update={"cpu": "a CPU"}))
    built = report.build(runs, Path(study.records), cv.COMPARISONS)
    (complete,) = [c for c in built["comparisons"] if c["a"] == "baseline"]
    block = report.readme_block(built, "2026-01-02")
    assert block.startswith(report.README_START) and block.endswith(report.README_END)
    assert (
        f"| NER (WNUT-16 tweets), F1 | baseline → elmo | {complete['score_a']:.2f} → {complete['score_b']:.2f} |"
        in block
    )
    # Six pairs, every one gaining: the exact sign-flip p is 2/64, below 0.05, and the interval is clear of 0.
    assert complete["p"] == pytest.approx(2 / 64) and complete["interval"][0] > 0
    words = " ".join(block.split())
    assert f"NER F1, baseline → elmo: {complete['gain']:+.2f} (significant: interval clear of 0, p 0.031)" in words
    assert "`a CPU`" in words and "glove → glove_elmo: 2 of 6 pairs so far" in words
    assert "| NER (WNUT-16 tweets), F1 | glove" not in block
    # The same comparison with a p above 0.05: the words follow the p, not the gain.
    one_loss = dict(complete, p=0.09)
    assert "(not significant at 0.05: p 0.09)" in " ".join(
        report.readme_block({**built, "comparisons": [one_loss]}, "2026-01-02").split()
    )
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.README_START}\nold\n{report.README_END}\n\nafter\n", encoding="utf-8")
    report.update_readme(readme, built, "2026-01-02")
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# x\n\n") and text.endswith("\n\nafter\n") and "\nold\n" not in text and block in text
    (tmp_path / "plain.md").write_text("no block\n", encoding="utf-8")
    with pytest.raises(ExperimentError, match="plain.md"):
        report.update_readme(tmp_path / "plain.md", built, "2026-01-02")


def test_the_readme_block_is_found_by_how_it_opens_and_written_with_todays_first_line(tmp_path):
    from experiments.engine.run import write_record

    study = cv.Study(k=3, seeds=(0,), tasks=("ner",), arms=("baseline", "elmo"), records=str(tmp_path / "r"))
    runs = cv.plan_runs(study)
    for run in runs:
        write_record(Path(study.records), fake_record(run.id, 10 + (run.labels["arm"] == "elmo"), 5, 5))
    built = report.build(runs, Path(study.records), cv.COMPARISONS)
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# x\n\n{report.README_OPENING} made by another command -->\nold\n{report.README_END}\n", encoding="utf-8"
    )
    report.update_readme(readme, built, "2026-01-02")
    text = readme.read_text(encoding="utf-8")
    assert text == f"# x\n\n{report.readme_block(built, '2026-01-02')}\n" and text.count(report.README_OPENING) == 1
    assert "made by another command" not in text and report.README_START in text
