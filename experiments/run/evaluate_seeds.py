"""Evaluate every seed's model-best of some runs on a test set.

Usage: python -m experiments.run.evaluate_seeds TEST.spacy METRICS_DIR RUN_DIR [RUN_DIR ...]

Writes METRICS_DIR/<run name>/seed{N}.json for every RUN_DIR/seed{N}/model-best:
spaCy's scores (``nlp.evaluate``) plus, for text classification,
``cats_accuracy`` (the share of docs whose top class is the gold class).

Each file also records, under "evaluated", the digests of the model folder and
of the test split it scored, and under "run" the run folder it came from: two
run folders of the same name (a/ner_baseline, b/ner_baseline) would share one
file, so one call refuses them, and a file holding another run folder's scores is
never overwritten. A seed whose file records the model and test split
as they are now is not scored again; one trained again since, or a test split
converted again, is. (Scoring again every time would cost minutes per run of
the workflow: every ELMo model runs its biLM over the whole test split.)
"""
import json
from pathlib import Path
from typing import Dict, List

import spacy
import srsly
import typer
from spacy.training import Corpus

from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic
from experiments.run.fingerprint import file_digest

EVALUATED = "evaluated"
RUN = "run"


def evaluated_inputs(model_dir: Path, test_path: Path) -> Dict[str, str]:
    """What a seed's scores were computed from: the digests of its model folder and the test split."""
    return {"model": file_digest(model_dir), "test": file_digest(test_path)}


def metrics_path(metrics_dir: Path, model_dir: Path) -> Path:
    """METRICS_DIR/<run name>/seed{N}.json for RUN_DIR/seed{N}/model-best."""
    return metrics_dir / model_dir.parent.parent.name / f"{model_dir.parent.name}.json"


def run_of(model_dir: Path) -> str:
    """The run folder of RUN_DIR/seed{N}/model-best: relative to the working folder when inside it."""
    run_dir = model_dir.parent.parent.resolve()
    try:
        return run_dir.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return run_dir.as_posix()


def stored_metrics(output: Path) -> dict:
    """A seed's metrics file, or {} when there is none or it is unreadable."""
    try:
        record = json.loads(output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def is_evaluated(output: Path, model_dir: Path, test_path: Path) -> bool:
    """True when ``output`` holds the scores of ``model_dir`` (of its run folder) on ``test_path`` as both are now."""
    if not model_dir.is_dir() or not test_path.exists():
        return False
    record = stored_metrics(output)
    return record.get(RUN) == run_of(model_dir) and record.get(EVALUATED) == evaluated_inputs(model_dir, test_path)


def check_names(metrics_dir: Path, run_dirs: List[Path]) -> None:
    """Two run folders of one name would write the same METRICS_DIR/<name>/seed{N}.json."""
    seen: Dict[str, Path] = {}
    for run_dir in run_dirs:
        if run_dir.name in seen and seen[run_dir.name] != run_dir:
            raise ExperimentError(metrics_dir, expected="run folders of different names (each run's scores go to "
                                  "METRICS_DIR/<its folder's name>/)",
                                  found=f"{seen[run_dir.name]} and {run_dir}, both named {run_dir.name}",
                                  fix="score them into different METRICS_DIRs")
        seen[run_dir.name] = run_dir


def evaluate_model(model_dir: Path, test_path: Path) -> Dict[str, object]:
    nlp = spacy.load(model_dir)
    examples = list(Corpus(test_path)(nlp))
    scores = nlp.evaluate(examples)
    if "textcat" in nlp.pipe_names:
        correct = 0
        for eg, doc in zip(examples, nlp.pipe(eg.reference.text for eg in examples)):
            gold = max(eg.reference.cats, key=eg.reference.cats.get)
            correct += max(doc.cats, key=doc.cats.get) == gold
        scores["cats_accuracy"] = correct / max(1, len(examples))
    return scores


def evaluate_runs(test_path: Path, metrics_dir: Path, run_dirs: List[Path]) -> None:
    check_names(metrics_dir, run_dirs)
    for run_dir in run_dirs:
        models = sorted(run_dir.glob("seed*/model-best"))
        if not models:
            raise SystemExit(f"No seed*/model-best in {run_dir}: train it first.")
        for model in models:
            output = metrics_path(metrics_dir, model)
            if is_evaluated(output, model, test_path):
                print(f"{model}: {output} holds its scores on this test split, kept")
                continue
            other = stored_metrics(output).get(RUN)
            if other is not None and other != run_of(model):
                raise ExperimentError(output, expected=f"the scores of {run_of(model)} or no file",
                                      found=f"the scores of another run folder, {other}",
                                      fix="score this run into another METRICS_DIR, or remove the file")
            inputs = evaluated_inputs(model, test_path)
            scores = evaluate_model(model, test_path)
            write_atomic(output, srsly.json_dumps({**scores, EVALUATED: inputs, RUN: run_of(model)}, indent=2) + "\n")
            print(f"{model} -> {output}")


def main(
    test_path: Path = typer.Argument(..., exists=True),
    metrics_dir: Path = typer.Argument(...),
    run_dirs: List[Path] = typer.Argument(..., exists=True, file_okay=False),
) -> None:
    evaluate_runs(test_path, metrics_dir, run_dirs)


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command()(main)
    run_app(app)
