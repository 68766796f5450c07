"""One trained NER pipeline scored with its biLM in two arithmetics: what a precision (int8) changes in
the predictions, without the noise of training twice.

    python -m experiments.studies.precision_swap score MODEL TEST --output OUT.json   # fp32 against int8-always
    python -m experiments.studies.precision_swap pool OUT0.json OUT1.json ... --output POOLED.json

``MODEL`` is a pipeline with ``elmo`` and ``ner`` (e.g. a run of the cv study kept with ``--keep-model``),
``TEST`` a ``.spacy`` file of gold docs. The pipeline is loaded once per precision, with
``[components.elmo.model] precision`` overridden at load (nothing else changes: the NER's weights are the
same), and predicts every test doc. Reported: each precision's entity precision, recall and F1 (counted as
``experiments.engine.execute.ner_counts`` counts them, spaCy's rules), how many docs and predicted entities
differ between the two, and B - A in F1 with a 95% bootstrap interval over the test docs (the same docs
drawn for both, so the interval is that of the difference); each doc's counts are kept in the output.

``pool`` joins the outputs of several test sets (the folds of a cross-validation, each scored by its own
model): F1 pooled over all their docs (the counts summed, as the cv study pools its folds) in each
precision, B - A with a 95% bootstrap interval that draws docs within each file, and the per-file
differences with their own interval and sign-flip p (``experiments.report.comparison.paired_test``).
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import typer

from experiments.engine.execute import ner_counts
from experiments.errors import ExperimentError, run_app
from experiments.files import read_json, write_atomic
from experiments.report.comparison import paired_test
from experiments.report.cv import metrics_of

BOOTSTRAP, SEED = 2000, 0
COUNTS = ("tp", "fp", "fn")
Entity = Tuple[str, int, int]  # label, first token, end token
app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


def predict(model: Path, test: Path, precision: str) -> Tuple[List[Dict[str, int]], List[List[Entity]]]:
    """Per test doc, its NER counts and predicted entities with the pipeline's biLM in ``precision``."""
    import spacy
    from spacy.training import Corpus

    nlp = spacy.load(model, config={"components": {"elmo": {"model": {"precision": precision}}}})
    if "ner" not in nlp.pipe_names or "elmo" not in nlp.pipe_names:
        raise ExperimentError(
            model,
            expected="a pipeline with the elmo and ner components",
            found=f"the components {', '.join(nlp.pipe_names)}",
        )
    examples = list(Corpus(str(test))(nlp))
    for eg, doc in zip(examples, nlp.pipe(eg.predicted for eg in examples)):
        eg.predicted = doc
    counts = [ner_counts([eg]) for eg in examples]
    entities = [[(e.label_, e.start, e.end) for e in eg.predicted.ents] for eg in examples]
    return counts, entities


def scores_of(total: numpy.ndarray) -> Dict[str, float]:
    """Entity precision, recall and F1 (0-100) of summed (tp, fp, fn) counts, and the counts."""
    tp, fp, fn = (int(x) for x in total)
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": 100 * tp / (tp + fp) if tp + fp else 0.0,
        "recall": 100 * tp / (tp + fn) if tp + fn else 0.0,
        **metrics_of({"tp": tp, "fp": fp, "fn": fn}),
    }


def _f1_rows(total: numpy.ndarray) -> numpy.ndarray:
    """F1 (0-100) of each row of summed (tp, fp, fn) counts, as `experiments.report.cv.metrics_of` gives it."""
    tp, fp, fn = total[..., 0], total[..., 1], total[..., 2]
    denominator = 2 * tp + fp + fn
    return numpy.where(tp > 0, 100 * 2 * tp / numpy.maximum(denominator, 1), 0.0)


def bootstrap_difference(
    groups: Sequence[Tuple[numpy.ndarray, numpy.ndarray]], draws: int = BOOTSTRAP, seed: int = SEED
) -> List[float]:
    """The 95% bootstrap interval of B's F1 - A's over docs pooled from `groups`, each (A's, B's) per-doc
    (docs, 3) counts of the same docs: every draw takes as many docs from each group as it has, the
    same docs for A and B."""
    rng = numpy.random.default_rng(seed)
    drawn_a = numpy.zeros((draws, len(COUNTS)), dtype=numpy.int64)
    drawn_b = numpy.zeros_like(drawn_a)
    for a, b in groups:
        picks = rng.integers(0, len(a), size=(draws, len(a)))
        drawn_a += a[picks].sum(axis=1)
        drawn_b += b[picks].sum(axis=1)
    return [float(x) for x in numpy.percentile(_f1_rows(drawn_b) - _f1_rows(drawn_a), [2.5, 97.5])]


def _counts_array(counts: Sequence[Dict[str, int]]) -> numpy.ndarray:
    """Per-doc counts as a (docs, 3) array of (tp, fp, fn)."""
    return numpy.asarray([[c[k] for k in COUNTS] for c in counts], dtype=numpy.int64).reshape(-1, len(COUNTS))


def compare(
    a: Tuple[List[Dict[str, int]], List[List[Entity]]],
    b: Tuple[List[Dict[str, int]], List[List[Entity]]],
    draws: int = BOOTSTRAP,
    seed: int = SEED,
) -> Dict[str, Any]:
    """The two precisions' scores over the same docs, what differs, and B - A in F1 with its interval."""
    (counts_a, ents_a), (counts_b, ents_b) = a, b
    per_doc_a, per_doc_b = _counts_array(counts_a), _counts_array(counts_b)
    total_a, total_b = per_doc_a.sum(axis=0), per_doc_b.sum(axis=0)
    return {
        "docs": len(counts_a),
        "a": scores_of(total_a),
        "b": scores_of(total_b),
        "f1_difference": float(_f1_rows(total_b) - _f1_rows(total_a)),
        "interval": bootstrap_difference([(per_doc_a, per_doc_b)], draws, seed),
        "docs_that_differ": sum(set(x) != set(y) for x, y in zip(ents_a, ents_b)),
        "entities_predicted": [sum(map(len, ents_a)), sum(map(len, ents_b))],
        "entities_in_one_only": sum(len(set(x) ^ set(y)) for x, y in zip(ents_a, ents_b)),
        "per_doc": {"a": per_doc_a.tolist(), "b": per_doc_b.tolist()},
    }


@app.command("score")
def score(
    model: Path = typer.Argument(..., help="A trained pipeline with elmo and ner"),
    test: Path = typer.Argument(..., help="Gold docs (.spacy)"),
    a: str = typer.Option("fp32", "--a", help="The precision compared against"),
    b: str = typer.Option("int8-always", "--b", help="The precision compared"),
    output: Optional[Path] = typer.Option(None, "--output", help="Write the figures here as JSON"),
) -> None:
    """Score MODEL on TEST with its biLM in precision A and in precision B."""
    for path in (model, test):
        if not path.exists():
            raise ExperimentError(path, expected="a trained pipeline and a .spacy test file", found="nothing")
    result = {"model": str(model), "test": str(test), "precisions": [a, b]}
    result.update(compare(predict(model, test, a), predict(model, test, b)))
    _write(result, output)


SCORE_KEYS = ("test", "precisions", "docs", "a", "b", "f1_difference", "docs_that_differ", "entities_in_one_only")


def _per_doc(path: Path, result: Any) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """A score's per-doc counts, A's and B's, as (docs, 3) arrays, checked against its totals."""
    missing = [key for key in SCORE_KEYS if key not in result] if isinstance(result, dict) else list(SCORE_KEYS)
    if missing:
        raise ExperimentError(path, expected="the output of precision_swap score", found=f"no {', '.join(missing)}")
    sides = result.get("per_doc")
    if not isinstance(sides, dict) or not all(isinstance(sides.get(side), list) for side in "ab"):
        raise ExperimentError(
            path,
            expected="the output of precision_swap score with each doc's counts (per_doc)",
            found="no per_doc",
            fix="score the model again with this version",
        )
    arrays = []
    for side in "ab":
        counts = numpy.asarray(sides[side], dtype=numpy.int64)
        if counts.ndim != 2 or counts.shape != (result.get("docs"), len(COUNTS)):
            raise ExperimentError(
                path,
                expected=f"{result.get('docs')} rows of {len(COUNTS)} counts for {side}",
                found=f"an array of shape {counts.shape}",
            )
        if [int(x) for x in counts.sum(axis=0)] != [result[side][k] for k in COUNTS]:
            raise ExperimentError(path, expected=f"per_doc summing to {side}'s counts", found="other sums")
        arrays.append(counts)
    return arrays[0], arrays[1]


def pool_results(results: Dict[str, Dict[str, Any]], draws: int = BOOTSTRAP, seed: int = SEED) -> Dict[str, Any]:
    """Scores over the docs of several ``score`` outputs ({name: output}): pooled A and B, B - A with a
    bootstrap interval drawing docs within each output, and the per-output differences' paired test."""
    sides = {name: _per_doc(Path(name), r) for name, r in results.items()}
    precisions = {tuple(r["precisions"]) for r in results.values()}
    tests = [r["test"] for r in results.values()]
    if len(precisions) != 1:
        raise ExperimentError(
            ", ".join(results), expected="outputs comparing the same two precisions", found=str(sorted(precisions))
        )
    if len(set(tests)) != len(tests):
        raise ExperimentError(", ".join(results), expected="each test set once", found="a test set twice")
    total_a = sum(a.sum(axis=0) for a, _ in sides.values())
    total_b = sum(b.sum(axis=0) for _, b in sides.values())
    return {
        "precisions": list(next(iter(precisions))),
        "outputs": len(results),
        "docs": sum(r["docs"] for r in results.values()),
        "a": scores_of(total_a),
        "b": scores_of(total_b),
        "f1_difference": float(_f1_rows(total_b) - _f1_rows(total_a)),
        "interval": bootstrap_difference(list(sides.values()), draws, seed),
        "docs_that_differ": sum(r["docs_that_differ"] for r in results.values()),
        "entities_in_one_only": sum(r["entities_in_one_only"] for r in results.values()),
        "per_output": {name: r["f1_difference"] for name, r in results.items()},
        "per_output_test": paired_test(numpy.asarray([r["f1_difference"] for r in results.values()])),
    }


@app.command("pool")
def pool(
    scores: List[Path] = typer.Argument(..., help="Outputs of precision_swap score, one per test set"),
    output: Optional[Path] = typer.Option(None, "--output", help="Write the figures here as JSON"),
) -> None:
    """Pool several outputs of ``score`` (one per fold): F1 over all their docs in each precision, and B - A."""
    _write(pool_results({str(path): read_json(path, "an output of precision_swap score") for path in scores}), output)


def _write(result: Dict[str, Any], output: Optional[Path]) -> None:
    """Print `result` without its per-doc counts; write it whole to `output`, those counts on one line."""
    shown = json.dumps({key: value for key, value in result.items() if key != "per_doc"}, indent=1)
    if output is not None:
        per_doc = result.get("per_doc")
        text = (
            shown if per_doc is None else f'{shown[:-2]},\n "per_doc": {json.dumps(per_doc, separators=(",", ":"))}\n}}'
        )
        write_atomic(output, text + "\n")
    typer.echo(shown)


if __name__ == "__main__":
    run_app(app)
