"""experiments/studies/precision_swap.py: one trained NER pipeline scored with its biLM in two precisions."""

import json
import shutil

import pytest
from spacy.tokens import DocBin

from experiments.errors import ExperimentError
from experiments.studies import precision_swap

from ..pipeline.pipelines import elmo_pipeline


def counts(tp, fp, fn):
    return {"tp": tp, "fp": fp, "fn": fn}


def test_the_same_predictions_differ_by_nothing():
    side = ([counts(2, 1, 0), counts(0, 0, 3)], [[("PER", 0, 1), ("LOC", 3, 4), ("ORG", 5, 6)], []])
    result = precision_swap.compare(side, side, draws=50)
    assert result["f1_difference"] == 0 and result["interval"] == [0.0, 0.0]
    assert result["docs_that_differ"] == result["entities_in_one_only"] == 0
    assert result["a"] == result["b"] and result["a"]["precision"] == pytest.approx(200 / 3)


def test_a_changed_entity_counts_once_per_side_and_moves_the_f1():
    a = ([counts(1, 0, 1), counts(1, 0, 0)], [[("PER", 0, 1)], [("LOC", 2, 3)]])
    b = ([counts(1, 1, 1), counts(1, 0, 0)], [[("PER", 0, 1), ("ORG", 4, 5)], [("LOC", 2, 3)]])
    result = precision_swap.compare(a, b, draws=200)
    assert result["docs_that_differ"] == 1 and result["entities_in_one_only"] == 1
    assert result["entities_predicted"] == [2, 3]
    # A: 2 tp, 0 fp, 1 fn -> F1 80; B: 2 tp, 1 fp, 1 fn -> F1 66.67.
    assert result["f1_difference"] == pytest.approx(200 / 3 - 80)
    assert result["interval"][0] <= result["f1_difference"] <= result["interval"][1]


def test_a_saved_pipeline_is_scored_in_both_precisions(tmp_path, fixture_paths):
    bilm = tmp_path / "bilm"
    bilm.mkdir()
    shutil.copy(fixture_paths[0], bilm / "options.json")
    shutil.copy(fixture_paths[1], bilm / "weights.hdf5")
    nlp, examples = elmo_pipeline(bilm)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "test.spacy")
    fp32 = precision_swap.predict(tmp_path / "model", tmp_path / "test.spacy", "fp32")
    assert len(fp32[0]) == len(fp32[1]) == len(examples)
    same = precision_swap.compare(fp32, precision_swap.predict(tmp_path / "model", tmp_path / "test.spacy", "fp32"))
    assert same["f1_difference"] == 0 and same["docs_that_differ"] == 0  # the same arithmetic: the same output
    out = tmp_path / "swap.json"
    precision_swap.score(tmp_path / "model", tmp_path / "test.spacy", "fp32", "int8-always", out)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["precisions"] == ["fp32", "int8-always"] and written["docs"] == len(examples)
    assert len(written["per_doc"]["a"]) == len(examples)  # what pool needs
    with pytest.raises(ExperimentError, match="elmo and ner"):
        nlp.remove_pipe("ner")
        nlp.to_disk(tmp_path / "no_ner")
        precision_swap.predict(tmp_path / "no_ner", tmp_path / "test.spacy", "fp32")


def scored(test, a, b, draws=50):
    """An output of ``score`` for per-doc counts a and b (lists of (tp, fp, fn)), entities left out."""
    result = precision_swap.compare(
        ([counts(*c) for c in a], [[] for _ in a]), ([counts(*c) for c in b], [[] for _ in b]), draws=draws
    )
    return {"test": test, "precisions": ["fp32", "int8-always"], **result}


def test_pooling_sums_the_counts_of_every_fold_and_draws_docs_within_each():
    fold0 = scored("f0", [(1, 0, 1), (2, 0, 0), (0, 1, 0)], [(1, 1, 1), (2, 0, 0), (0, 1, 0)])
    fold1 = scored("f1", [(3, 1, 0), (0, 0, 2)], [(3, 1, 0), (0, 0, 2)])
    pooled = precision_swap.pool_results({"0.json": fold0, "1.json": fold1}, draws=500)
    # fp32: 6 tp, 2 fp, 3 fn -> F1 = 12 / 17; int8: 6 tp, 3 fp, 3 fn -> 12 / 18.
    assert pooled["a"]["tp"] == 6 and pooled["b"]["fp"] == 3 and pooled["docs"] == 5
    assert pooled["f1_difference"] == pytest.approx(100 * (12 / 18 - 12 / 17))
    assert pooled["interval"][0] <= pooled["f1_difference"] <= pooled["interval"][1] <= 0.0
    # The pooled difference is not the mean of the folds' differences (each fold's own F1).
    assert pooled["per_output"] == {"0.json": fold0["f1_difference"], "1.json": 0.0}
    assert pooled["per_output_test"]["pairs"] == 2


def test_pooling_refuses_outputs_it_cannot_pair():
    fold0 = scored("f0", [(1, 0, 1)], [(1, 0, 1)])
    old = {key: value for key, value in fold0.items() if key != "per_doc"}  # written before per_doc was kept
    with pytest.raises(ExperimentError, match="score the model again"):
        precision_swap.pool_results({"old.json": old})
    with pytest.raises(ExperimentError, match="each test set once"):
        precision_swap.pool_results({"a.json": fold0, "b.json": fold0})
    other = {**scored("f1", [(1, 0, 0)], [(1, 0, 0)]), "precisions": ["fp32", "bf16"]}
    with pytest.raises(ExperimentError, match="the same two precisions"):
        precision_swap.pool_results({"a.json": fold0, "b.json": other})
    edited = {**fold0, "a": {**fold0["a"], "tp": 7}}
    with pytest.raises(ExperimentError, match="summing to a's counts"):
        precision_swap.pool_results({"a.json": edited})
    with pytest.raises(ExperimentError, match="no test"):
        precision_swap.pool_results({"a.json": ["not", "an", "output"]})
