"""Score every seed's model-best of some runs on a test set, as runs of the engine.

Usage: python -m experiments.demo.evaluate_seeds TEST.spacy METRICS_DIR RUN_DIR [RUN_DIR ...]

Each RUN_DIR/seed{N}/model-best (``experiments.demo.train_seeds``) is an engine run
(``experiments.engine.run.Run``) named ``<run name>/seed{N}``: the config the model was trained
from (its own ``config.cfg``, seed included), scored on TEST, with the model folder as an input.
Its fingerprint is the engine's: the resolved config, every file it reads (data, biLM), the
versions, the test split, and the model's own digest. So whether a seed is scored is decided by the
engine's one done-check (``is_done``: METRICS_DIR/records/<run name>/seed{N}.json exists and holds
that fingerprint), and the record is written by the engine's scorer (``experiments.engine.execute.score``):
spaCy's scores with the counts they come from and, for text classification, ``cats_accuracy``.
A model trained again, a test split converted again, or data or a biLM changed since the model was
trained makes the seed not done, and it is scored again; an unchanged seed is kept. A model whose
inputs changed after it was trained (the fingerprint ``train_seeds`` stored beside it no longer
matches what its config reads) is refused rather than scored: its score would be stale. A seed
``train_seeds --test`` already scored on TEST (its record beside the seed's folder holds the digests of
this model and this test split) is recorded from that record, not scored again.

METRICS_DIR/<run name>/seed{N}.json, which the reports read, is a view of the record
(``experiments.engine.views``): its scores, ``evaluated`` (the digests of the model and test split)
and ``run``, the run folder it came from. Two run folders of one name (a/ner_baseline,
b/ner_baseline) would share these files: one call refuses them, and a record of another run folder is
never overwritten. (Scoring again every time would cost minutes per run of the workflow: every ELMo
model runs its biLM over the whole test split.)
"""

import json
from pathlib import Path
from typing import Dict, List, Optional

import typer

from experiments.demo.train_seeds import record_of_model_in_place, stored_training_fingerprint, training_fingerprint
from experiments.engine.execute import score
from experiments.engine.run import Run, RunRecord, digest, fingerprint, is_done, stored_record, write_record
from experiments.engine.views import view_of, view_path
from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic

RUN = "run"
FOLDER = "folder"  # the run folder, among a record's labels


def records_dir(metrics_dir: Path) -> Path:
    """Where the seeds' engine records go (as the full workflow keeps its own)."""
    return metrics_dir / "records"


def run_of(model_dir: Path) -> str:
    """The run folder of RUN_DIR/seed{N}/model-best: relative to the working folder when inside it."""
    run_dir = model_dir.parent.parent.resolve()
    try:
        return run_dir.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return run_dir.as_posix()


def seed_run(model_dir: Path, test_path: Path) -> Run:
    """RUN_DIR/seed{N}/model-best, scored on ``test_path``, as the engine run ``<run name>/seed{N}``."""
    from spacy.util import load_config

    config = model_dir / "config.cfg"
    try:
        seed = int(load_config(config, interpolate=False)["system"]["seed"])
    except (OSError, KeyError, TypeError, ValueError) as err:
        raise ExperimentError(
            config,
            expected="the config.cfg spaCy saves with a trained pipeline, with its [system] seed",
            found=f"{type(err).__name__}: {err}".splitlines()[0],
            fix="train the run with experiments.demo.train_seeds",
        ) from None
    return Run(
        id=f"{model_dir.parent.parent.name}/{model_dir.parent.name}",
        config=str(config),
        overrides=(),
        seed=seed,
        test=str(test_path),
        inputs=(str(model_dir),),
        labels={FOLDER: run_of(model_dir)},
    )


def check_current(run: Run, model_dir: Path) -> None:
    """Refuse a model trained from data, a biLM or versions that changed since: the fingerprint
    ``train_seeds`` stored beside it against what the config the model was trained from reads now."""
    stored = stored_training_fingerprint(model_dir.parent)
    if stored is None:
        return
    now = training_fingerprint(run)
    stale = [
        key for key in sorted(stored) if (key.startswith("reads ") or key == "versions") and now.get(key) != stored[key]
    ]
    if stale:
        raise ExperimentError(
            model_dir,
            expected="a model trained from the data, biLM and versions there are now",
            found=f"{', '.join(stale)} changed since it was trained",
            fix="train it again with experiments.demo.train_seeds (same command), then score it",
        )


def scored_when_trained(run: Run, model_dir: Path) -> Optional[RunRecord]:
    """The record ``train_seeds --test`` left beside RUN_DIR/seed{N} when it scored this very model on
    this very test split (the digests it holds of both are theirs now), as the record of ``run``; else None."""
    trained = record_of_model_in_place(model_dir.parent)
    if trained is None or trained.evaluated.get("test") != digest(Path(run.test)):
        return None
    return trained.model_copy(
        update={
            "run": run.id,
            "config": run.config,
            "overrides": {},
            "test": run.test,
            "labels": dict(run.labels),
            "fingerprint": fingerprint(run),
        }
    )


def check_names(metrics_dir: Path, run_dirs: List[Path]) -> None:
    """Two run folders of one name would write the same METRICS_DIR/<name>/seed{N}.json."""
    seen: Dict[str, Path] = {}
    for run_dir in run_dirs:
        if run_dir.name in seen and seen[run_dir.name] != run_dir:
            raise ExperimentError(
                metrics_dir,
                expected="run folders of different names (each run's scores go to METRICS_DIR/<its folder's name>/)",
                found=f"{seen[run_dir.name]} and {run_dir}, both named {run_dir.name}",
                fix="score them into different METRICS_DIRs",
            )
        seen[run_dir.name] = run_dir


def write_view(metrics_dir: Path, run: Run) -> Path:
    """METRICS_DIR/<run name>/seed{N}.json from the run's record (rewritten only where it differs)."""
    record = stored_record(records_dir(metrics_dir), run)
    view = {**json.loads(view_of(record)), RUN: record.labels[FOLDER]}
    text = json.dumps(view, indent=2) + "\n"
    path = view_path(metrics_dir, run.id)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_atomic(path, text)
    return path


def evaluate_runs(test_path: Path, metrics_dir: Path, run_dirs: List[Path]) -> None:
    check_names(metrics_dir, run_dirs)
    records = records_dir(metrics_dir)
    for run_dir in run_dirs:
        models = sorted(run_dir.glob("seed*/model-best"))
        if not models:
            raise SystemExit(f"No seed*/model-best in {run_dir}: train it first.")
        for model in models:
            run = seed_run(model, test_path)
            check_current(run, model)
            stored = stored_record(records, run)
            other = stored.labels.get(FOLDER) if stored is not None else None
            if other is not None and other != run.labels[FOLDER]:
                raise ExperimentError(
                    view_path(metrics_dir, run.id),
                    expected=f"the scores of {run.labels[FOLDER]} or no file",
                    found=f"the scores of another run folder, {other}",
                    fix="score this run into another METRICS_DIR, or remove its record",
                )
            if is_done(run, records):
                print(f"{model}: its record holds its scores on this test split, kept")
            elif (scored := scored_when_trained(run, model)) is not None:
                print(f"{model}: scored on this test split when it was trained, its record kept")
                write_record(records, scored)
            else:
                score(run, model, records, fingerprint(run), model.parent)
            print(f"{model} -> {write_view(metrics_dir, run)}")


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
