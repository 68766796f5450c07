"""Train one spaCy config once per seed: OUTPUT_DIR/seed{N}/model-best (the demo workflow's runs).

Usage: python -m experiments.run.train_seeds CONFIG OUTPUT_DIR --seeds "0 1 2"
    [--gpu-id -1] [-- --paths.train ... any spacy train override]

The training half of an engine run (``experiments.engine``), for a workflow that trains now and
scores later (``experiments.run.evaluate_seeds``, which makes each seed an engine run and records it
under the engine's one done-check). Each seed is trained by the engine's trainer
(``experiments.engine.execute.train_into``: a temporary folder beside its final place, the dev curve
OUTPUT_DIR/seed{N}/train_log.jsonl kept by spaCy's console logger) and swapped into place when it
ends (``swap_into_place``). Beside model-best goes the engine's fingerprint of the training
(``experiments.run.fingerprint``: the config with its overrides, every file it reads, the versions).

A seed whose model-best exists is skipped only when that fingerprint equals what would be trained
now; otherwise it is trained again, and the message names what changed. So an interrupted run
resumes where it stopped, and a changed setting, data split or biLM never leaves a stale model in
place; ``evaluate_seeds`` refuses to score a model whose stored fingerprint no longer matches what
its config reads. The logger is not part of the fingerprint: it does not change what is trained.
"""
from pathlib import Path
from typing import List

import typer
from weasel.util import parse_config_overrides

from spacy_elmo.training.run.config import CONFIG_OVERRIDES_ENV

from experiments.engine.execute import swap_into_place, train_into
from experiments.errors import run_app
from experiments.records import parse_seeds
from experiments.run.fingerprint import changed, read_fingerprint, run_fingerprint, write_fingerprint


def overrides_from_args(args: List[str]) -> dict:
    """The ``--section.key value`` settings of a command line (and of $SPACY_CONFIG_OVERRIDES), as spaCy reads them."""
    return parse_config_overrides(args, env_var=CONFIG_OVERRIDES_ENV)


def seed_overrides(overrides: dict, seed: int) -> dict:
    return {**overrides, "system.seed": seed}


def is_trained(config: Path, output_dir: Path, seed: int, overrides: dict) -> bool:
    """True when the seed's model-best exists and was trained from what would be trained now."""
    final = output_dir / f"seed{seed}"
    return (final / "model-best").exists() and not changed(
        read_fingerprint(final), run_fingerprint(config, seed_overrides(overrides, seed))
    )


def train_seeds(config: Path, output_dir: Path, seeds: List[int], overrides: dict, gpu_id: int = -1) -> None:
    for seed in seeds:
        final = output_dir / f"seed{seed}"
        fingerprint = run_fingerprint(config, seed_overrides(overrides, seed))
        if (final / "model-best").exists():
            differs = changed(read_fingerprint(final), fingerprint)
            if not differs:
                print(f"seed {seed}: {final} was trained from the same config, data and biLM, skipped")
                continue
            print(f"seed {seed}: {final} is stale ({', '.join(differs)} changed), training it again")
        partial = output_dir / f".seed{seed}.partial"
        train_into(config, seed_overrides(overrides, seed), partial, gpu_id)
        write_fingerprint(partial, fingerprint)
        swap_into_place(partial, final, output_dir / f".seed{seed}.stale")


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., exists=True, dir_okay=False),
    output_dir: Path = typer.Argument(...),
    seeds: str = typer.Option("0", help="Space-separated seeds"),
    gpu_id: int = typer.Option(-1, help="GPU id, or -1 for the CPU"),
) -> None:
    overrides = overrides_from_args(ctx.args)
    train_seeds(config, output_dir, parse_seeds(seeds), overrides, gpu_id)


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(main)
    run_app(app)
