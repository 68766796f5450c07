"""Train one spaCy config once per seed, each seed a run of the studies' engine (the demo workflow's runs).

Usage: python -m experiments.demo.train_seeds CONFIG OUTPUT_DIR --seeds "0 1 2"
    [--gpu-id -1] [--threads 1] [--test TEST.spacy] [--paths.train ... any spacy train override]

``--threads N`` sets torch's threads for the whole command (``torch.set_num_threads``; 0 leaves torch's
default, one per core): the workflow passes its ``vars.threads``. Like the logger, it is not part of the
fingerprint: it changes how fast a run trains, not what it trains.

Seed N is the engine run ``<OUTPUT_DIR's name>/seed{N}`` (``seed_run``: CONFIG with the overrides and
the seed), trained by the engine's trainer into a hidden folder beside its place
(``experiments.engine.execute``) and swapped into OUTPUT_DIR/seed{N} when it ends: model-best, and the
dev curve in train_log.jsonl (spaCy's console logger). Its fingerprint is the engine's (the config
with its overrides, every file or folder it reads, the versions; and with ``--test`` the test split).

With ``--test`` the seed is the whole engine run: trained, scored on TEST and recorded by
``experiments.engine.execute.execute``, its model kept. The record, OUTPUT_DIR/seed{N}.json (the
engine's RECORDS/<id>.json, RECORDS being the folder that holds OUTPUT_DIR), is what the engine's one
done-check reads (``is_done``): a seed is skipped when its model is in place and its record holds the
fingerprint of what would be trained now and the digest of that model; a model that is current without
such a record (trained before without ``--test``, scored on another test split, or trained when its
scoring then failed) is scored (``execute.score``), not trained again. ``evaluate_seeds`` serves a
recorded seed's scores without scoring the model again.

Without ``--test`` (train now, score later with ``experiments.demo.evaluate_seeds``) the seed is the
training half of that run: no test split, so no record (an earlier record of the seed is removed: it
describes the model replaced).

Either way the model's training fingerprint goes into its folder with it
(OUTPUT_DIR/seed{N}/fingerprint.json), and the model is current when that (or, in a folder without one,
the training part of the record of this very model) equals what would be trained now. A changed
setting, data split or biLM trains the seed again, and the message names what changed; an
interrupted run resumes where it stopped, and the seed's folder is never half written.
``evaluate_seeds`` refuses to score a model whose training fingerprint no longer matches what its
config reads. The logger is not part of the fingerprint: it does not change what is trained.
"""

import json
from pathlib import Path
from typing import Dict, List, Optional

import typer

from experiments.engine.execute import TRAINING_FINGERPRINT, execute, keep_in_place, score, scratch, train_into
from experiments.engine.run import (
    Run,
    RunRecord,
    changed,
    config_fingerprint,
    digest,
    fingerprint,
    not_done_because,
    overrides_from_args,
    read_record,
    training_part,
)
from experiments.errors import ExperimentError, run_app
from experiments.records import parse_seeds


def seed_run(
    config: Path, output_dir: Path, seed: int, overrides: Dict[str, object], test: Optional[Path] = None
) -> Run:
    """Seed ``seed`` of OUTPUT_DIR as the engine run ``<OUTPUT_DIR's name>/seed{N}`` (scored on ``test``;
    without one the run can only be trained, not scored)."""
    return Run(
        id=f"{output_dir.name}/seed{seed}",
        config=str(config),
        overrides=tuple(overrides.items()),
        seed=seed,
        test=str(test) if test is not None else "",
    )


def training_fingerprint(run: Run) -> Dict[str, str]:
    """The fingerprint of the run's training alone: its config, overrides, seed, what they read, the versions."""
    return config_fingerprint(run.config, run.settings, run.id)


def record_of_model_in_place(seed_dir: Path) -> Optional[RunRecord]:
    """The record ``--test`` left beside OUTPUT_DIR/seed{N} (OUTPUT_DIR/seed{N}.json) when it is the record of
    the model there now (it holds the digest of seed{N}/model-best); None when there is none, it is not
    readable, or it describes another model (one trained before, or a training whose scoring failed)."""
    model = seed_dir / "model-best"
    try:
        record = read_record(seed_dir.parent / f"{seed_dir.name}.json")
    except ExperimentError:
        return None
    return record if model.exists() and record.evaluated.get("model") == digest(model) else None


def stored_training_fingerprint(seed_dir: Path) -> Optional[Dict[str, str]]:
    """The training fingerprint kept with OUTPUT_DIR/seed{N}: its fingerprint.json, else the training part
    of the record of the model in place (``record_of_model_in_place``); None when neither is there."""
    try:
        stored = json.loads((seed_dir / TRAINING_FINGERPRINT).read_text(encoding="utf-8"))
        if isinstance(stored, dict):
            return stored
    except (OSError, ValueError):
        pass
    record = record_of_model_in_place(seed_dir)
    return training_part(record.fingerprint) if record is not None else None


def not_trained_because(run: Run, work: Path) -> List[str]:
    """Why the training of ``run`` kept in WORK/<id> is not current: nothing when its model-best exists and
    its stored training fingerprint equals what would be trained now."""
    if not (work / run.id / "model-best").exists():
        return [f"no {work / run.id / 'model-best'}"]
    return changed(stored_training_fingerprint(work / run.id), training_fingerprint(run))


def not_scored_because(run: Run, work: Path) -> List[str]:
    """Why the kept model of ``run`` has no current record: the engine's done-check (``not_done_because``),
    and a record that holds the current fingerprint but another model's digest (``record_of_model_in_place``)."""
    why = not_done_because(run, work)
    if not why and record_of_model_in_place(work / run.id) is None:
        return [f"no record of {work / run.id / 'model-best'} as it is now"]
    return why


def train_only(run: Run, work: Path, gpu_id: int = -1) -> None:
    """Train ``run`` into WORK/<id> (the engine's trainer and swap), its training fingerprint kept there and
    the record of the model it replaces removed."""
    before = training_fingerprint(run)
    train_into(Path(run.config), run.settings, scratch(work, run.id, "partial"), gpu_id)
    keep_in_place(run.id, work, work, before)


def explain(why: List[str]) -> str:
    """Why a seed is trained again: what is missing, or the parts of its fingerprint that changed."""
    missing = [reason for reason in why if reason.startswith("no ")]
    return "; ".join(missing) if missing else f"{', '.join(why)} changed"


def train_seeds(
    config: Path, output_dir: Path, seeds: List[int], overrides: dict, gpu_id: int = -1, test: Optional[Path] = None
) -> None:
    """Each seed not done: trained (and with ``test`` scored and recorded) as an engine run. With ``test``,
    a seed whose kept model is current but whose record is not (none yet, or another test split) is
    scored again, not trained again."""
    work = output_dir.parent  # the engine's WORK and RECORDS: the run <name>/seed{N} lands in OUTPUT_DIR/seed{N}
    for seed in seeds:
        run = seed_run(config, output_dir, seed, overrides, test)
        final = work / run.id
        untrained = not_trained_because(run, work)
        unscored = not_scored_because(run, work) if test is not None and not untrained else []
        if not untrained and not unscored:
            print(
                f"seed {seed}: {final} was trained from the same config, data and biLM"
                f"{' and its record holds its scores on this test split' if test is not None else ''}, skipped"
            )
        elif not untrained:
            print(
                f"seed {seed}: {final} was trained from the same config, data and biLM, scoring it "
                f"({explain(unscored)})",
                flush=True,
            )
            score(run, final / "model-best", work, fingerprint(run), final)
        else:
            if (final / "model-best").exists():
                print(f"seed {seed}: {final} is stale ({explain(untrained)}), training it again", flush=True)
            if test is not None:
                execute(run, work, work, keep_model=True, gpu_id=gpu_id)
            else:
                train_only(run, work, gpu_id)


def use_threads(threads: int) -> None:
    """Train on ``threads`` torch threads (0: leave torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(threads)


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., exists=True, dir_okay=False),
    output_dir: Path = typer.Argument(...),
    seeds: str = typer.Option("0", help="Space-separated seeds"),
    gpu_id: int = typer.Option(-1, help="GPU id, or -1 for the CPU"),
    threads: int = typer.Option(0, min=0, help="Torch threads (0: torch's default, one per core)"),
    test: Optional[Path] = typer.Option(
        None,
        exists=True,
        dir_okay=False,
        help="Test split: each seed is also scored and recorded (OUTPUT_DIR/seedN.json)",
    ),
) -> None:
    overrides = overrides_from_args(ctx.args)
    use_threads(threads)
    train_seeds(config, output_dir, parse_seeds(seeds), overrides, gpu_id, test)


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(main)
    run_app(app)
