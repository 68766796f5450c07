"""Train one spaCy config once per seed: OUTPUT_DIR/seed{N}/model-best.

Usage: python -m experiments.run.train_seeds CONFIG OUTPUT_DIR --seeds "0 1 2"
    [--gpu-id -1] [-- --paths.train ... any spacy train override]

A seed whose model-best already exists is skipped, so an interrupted run
resumes where it stopped. Each run trains in a temporary folder beside its
final place and is renamed into place when it ends.
"""
import shutil
import sys
from pathlib import Path
from typing import List

import typer
from spacy.cli._util import parse_config_overrides
from spacy.cli.train import train


def train_seeds(config: Path, output_dir: Path, seeds: List[int], overrides: dict, gpu_id: int = -1) -> None:
    for seed in seeds:
        final = output_dir / f"seed{seed}"
        if (final / "model-best").exists():
            print(f"seed {seed}: {final} exists, skipped")
            continue
        partial = output_dir / f".seed{seed}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        train(config, partial, use_gpu=gpu_id, overrides={**overrides, "system.seed": seed})
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., exists=True, dir_okay=False),
    output_dir: Path = typer.Argument(...),
    seeds: str = typer.Option("0", help="Space-separated seeds"),
    gpu_id: int = typer.Option(-1, help="GPU id, or -1 for the CPU"),
) -> None:
    overrides = parse_config_overrides(ctx.args)
    train_seeds(config, output_dir, [int(s) for s in seeds.split()], overrides, gpu_id)


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(main)
    app(sys.argv[1:])
