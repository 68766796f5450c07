"""Evaluate every seed's model-best of some runs on a test set.

Usage: python -m experiments.run.evaluate_seeds TEST.spacy METRICS_DIR RUN_DIR [RUN_DIR ...]

Writes METRICS_DIR/<run name>/seed{N}.json for every RUN_DIR/seed{N}/model-best:
spaCy's scores (``nlp.evaluate``) plus, for text classification,
``cats_accuracy`` (the share of docs whose top class is the gold class).
"""
from pathlib import Path
from typing import Dict, List

import spacy
import srsly
import typer
from spacy.training import Corpus


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
    for run_dir in run_dirs:
        models = sorted(run_dir.glob("seed*/model-best"))
        if not models:
            raise SystemExit(f"No seed*/model-best in {run_dir}: train it first.")
        for model in models:
            output = metrics_dir / run_dir.name / f"{model.parent.name}.json"
            output.parent.mkdir(parents=True, exist_ok=True)
            srsly.write_json(output, evaluate_model(model, test_path))
            print(f"{model} -> {output}")


def main(
    test_path: Path = typer.Argument(..., exists=True),
    metrics_dir: Path = typer.Argument(...),
    run_dirs: List[Path] = typer.Argument(..., exists=True, file_okay=False),
) -> None:
    evaluate_runs(test_path, metrics_dir, run_dirs)


if __name__ == "__main__":
    typer.run(main)
