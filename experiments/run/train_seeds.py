"""Train one spaCy config once per seed: OUTPUT_DIR/seed{N}/model-best.

Usage: python -m experiments.run.train_seeds CONFIG OUTPUT_DIR --seeds "0 1 2"
    [--gpu-id -1] [-- --paths.train ... any spacy train override]

A seed whose model-best exists is skipped only when it was trained from exactly
what would be trained now (``experiments.run.fingerprint``: the config with its
overrides, the data and biLM it names, the versions); otherwise it is trained
again. So an interrupted run resumes where it stopped, and a changed setting,
data split or biLM never leaves a stale run in place. Each run trains in a
temporary folder beside its final place and is swapped into place when it ends.

Each run also keeps its dev curve, OUTPUT_DIR/seed{N}/train_log.jsonl (one line per
evaluation: step, losses, dev scores), written by spaCy's console logger; the
logger is not part of the fingerprint, since it does not change what is trained.
"""
import shutil
from pathlib import Path
from typing import List

import typer
from spacy.cli.train import train
from weasel.util import parse_config_overrides

from spacy_elmo.training.run.config import CONFIG_OVERRIDES_ENV

from experiments.engine.execute import dev_log_overrides
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
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        settings = seed_overrides(overrides, seed)
        train(config, partial, use_gpu=gpu_id, overrides={**settings, **dev_log_overrides(config, settings, partial)})
        write_fingerprint(partial, fingerprint)
        stale = output_dir / f".seed{seed}.stale"
        shutil.rmtree(stale, ignore_errors=True)
        if final.exists():
            final.rename(stale)
        partial.rename(final)
        shutil.rmtree(stale, ignore_errors=True)


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
