"""One trained NER pipeline scored with its biLM in two arithmetics: what a precision (int8) changes in
the predictions, without the noise of training twice.

    python -m experiments.studies.precision_swap MODEL TEST --output OUT.json   # fp32 against int8-always

``MODEL`` is a pipeline with ``elmo`` and ``ner`` (e.g. a run of the cv study kept with ``--keep-model``),
``TEST`` a ``.spacy`` file of gold docs. The pipeline is loaded once per precision, with
``[components.elmo.model] precision`` overridden at load (nothing else changes: the NER's weights are the
same), and predicts every test doc. Reported: each precision's entity precision, recall and F1 (counted as
``experiments.engine.execute.ner_counts`` counts them, spaCy's rules), how many docs and predicted entities
differ between the two, and B - A in F1 with a 95% bootstrap interval over the test docs (the same docs
drawn for both, so the interval is that of the difference).
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import typer

from experiments.engine.execute import ner_counts
from experiments.errors import ExperimentError, run_main
from experiments.files import write_atomic
from experiments.report.cv import metrics_of

BOOTSTRAP, SEED = 2000, 0
Entity = Tuple[str, int, int]  # label, first token, end token


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


def summed(counts: Sequence[Dict[str, int]]) -> Dict[str, int]:
    return {key: sum(c[key] for c in counts) for key in ("tp", "fp", "fn")}


def f1_of(counts: Sequence[Dict[str, int]]) -> float:
    return metrics_of(summed(counts))["f1"]


def scores_of(counts: Sequence[Dict[str, int]]) -> Dict[str, float]:
    """Entity precision, recall and F1 (0-100) and the counts they come from."""
    total = summed(counts)
    tp, fp, fn = total["tp"], total["fp"], total["fn"]
    return {
        **total,
        "precision": 100 * tp / (tp + fp) if tp + fp else 0.0,
        "recall": 100 * tp / (tp + fn) if tp + fn else 0.0,
        "f1": f1_of(counts),
    }


def compare(
    a: Tuple[List[Dict[str, int]], List[List[Entity]]],
    b: Tuple[List[Dict[str, int]], List[List[Entity]]],
    draws: int = BOOTSTRAP,
    seed: int = SEED,
) -> Dict[str, Any]:
    """The two precisions' scores over the same docs, what differs, and B - A in F1 with its interval."""
    (counts_a, ents_a), (counts_b, ents_b) = a, b
    n = len(counts_a)
    rng = numpy.random.default_rng(seed)
    gains = []
    for _ in range(draws):
        picks = rng.integers(0, n, size=n)
        gains.append(f1_of([counts_b[i] for i in picks]) - f1_of([counts_a[i] for i in picks]))
    low, high = numpy.percentile(gains, [2.5, 97.5])
    moved = sum(len(set(x) ^ set(y)) for x, y in zip(ents_a, ents_b))
    return {
        "docs": n,
        "a": scores_of(counts_a),
        "b": scores_of(counts_b),
        "f1_difference": f1_of(counts_b) - f1_of(counts_a),
        "interval": [float(low), float(high)],
        "docs_that_differ": sum(set(x) != set(y) for x, y in zip(ents_a, ents_b)),
        "entities_predicted": [sum(map(len, ents_a)), sum(map(len, ents_b))],
        "entities_in_one_only": moved,
    }


def main(
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
    text = json.dumps(result, indent=1)
    if output is not None:
        write_atomic(output, text + "\n")
    typer.echo(text)


if __name__ == "__main__":
    run_main(main)
