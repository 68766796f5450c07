"""Pretrain a biLM for a wall-clock budget, with a schedule that finishes.

A linear or cosine schedule needs its step count up front. This runs a short probe of the
config on this machine (the corpus is tokenised once, into a shared prepared folder), sets
``training.max_steps`` to what the budget allows at the probe's speed (capped by
``--max-epochs`` when given), trains and exports, then scores each held-out file given with
``--score`` (one JSON of forward/backward/mean perplexity per file).

    python -m experiments.pretrain_for_budget configs/bilm_release.cfg training/release \
        --minutes 11 --device cuda --paths.train corpus/release/pretrain/train.txt \
        --paths.dev corpus/release/pretrain/dev.txt --score corpus/release/pretrain/dev_wiki.txt

Extra ``--section.key value`` options override the config, as in ``spacy_elmo pretrain``.

Run again after an interruption, the same command continues the run in OUTPUT_DIR: once it
has saved a checkpoint, its step count is the one stored with it (config.cfg), with no new
probe, since a schedule cannot change its length on resume. A budget (``--minutes``,
``--max-epochs``) other than the one the run was planned for is then said to be ignored;
a new budget needs a new OUTPUT_DIR.
"""

import json
import math
import shutil
import time
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg
from weasel.util import parse_config_overrides

from experiments.errors import ExperimentError, run_app
from spacy_elmo.errors import ElmoError
from spacy_elmo.training.perplexity import perplexity
from spacy_elmo.training.pretrain import pretrain
from spacy_elmo.training.run.config import CONFIG_OVERRIDES_ENV, load_config
from spacy_elmo.training.run.run_dir import RunDir
from spacy_elmo.util import atomic_path

PROBE_STEPS = 40
PROBE_WARMUP = 10  # steps left out of the speed measurement (kernel choice, allocator warm-up)


def main(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., exists=True),
    output_dir: Path = typer.Argument(...),
    minutes: float = typer.Option(..., "--minutes", help="training time to fill (probe and scoring not counted)"),
    device: str = typer.Option("auto", "--device"),
    max_epochs: Optional[int] = typer.Option(None, "--max-epochs", help="never more than this many epochs"),
    score: List[Path] = typer.Option([], "--score", help="held-out text to score after training (repeatable)"),
):
    overrides = parse_config_overrides(ctx.args, env_var=CONFIG_OVERRIDES_ENV)
    try:
        return run_for_budget(config_path, output_dir, minutes, device, max_epochs, score, overrides)
    except ElmoError as err:
        msg.fail("Pretraining for a budget failed", str(err), exits=1)


def run_for_budget(
    config_path: Path,
    output_dir: Path,
    minutes: float,
    device: str,
    max_epochs: Optional[int],
    score: List[Path],
    overrides: dict,
) -> dict:
    if not (math.isfinite(minutes) and minutes > 0):
        raise ExperimentError(
            "--minutes",
            expected="a positive number of minutes of training",
            found=repr(minutes),
            fix="pass e.g. --minutes 10",
        )
    if max_epochs is not None and max_epochs < 1:
        raise ExperimentError(
            "--max-epochs",
            expected="a whole number of epochs of 1 or more (or no --max-epochs for no cap)",
            found=str(max_epochs),
            fix="pass e.g. --max-epochs 3",
        )
    prepared = output_dir.parent / f".{output_dir.name}.prepared"
    overrides["corpus.prepared_dir"] = str(prepared)
    probe_record = output_dir.parent / f".{output_dir.name}.probe.json"
    run = RunDir(output_dir)
    if run.config.exists() and run.has_progress:
        steps = load_config(run.config).training.max_steps  # what the run's schedule was built for
        measured = json.loads(probe_record.read_text(encoding="utf8")) if probe_record.exists() else {}
        msg.info(f"{output_dir} holds this run: continuing it to its {steps:,} steps, without a new probe")
        _say_if_ignored(output_dir, steps, measured, minutes, max_epochs)
    else:
        steps, measured = probe(config_path, output_dir, minutes, device, max_epochs, overrides)
        measured.update(minutes=minutes, max_epochs=max_epochs)  # the budget the steps were planned for
        probe_record.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(probe_record) as tmp:
            tmp.write_text(json.dumps(measured), encoding="utf8")
    overrides["training.max_steps"] = steps
    overrides["training.max_epochs"] = 0
    result = pretrain(config_path, output_dir, overrides=overrides, device=device, progress=False, resume=True)
    summary = {
        "config": str(config_path),
        "overrides": overrides,
        "minutes": measured.get("minutes"),
        "max_epochs": measured.get("max_epochs"),
        "probe_seconds_per_step": measured.get("seconds_per_step"),
        "probe_tokens_per_s": measured.get("tokens_per_s"),
        "steps": result.state.step,
        "epochs": result.state.epoch,
        "train_tokens": result.state.tokens,
        "train_seconds": result.state.elapsed,
        "tokens_per_s": result.tokens_per_second,
        "parameters": result.parameters,
        "steps_per_epoch": result.steps_per_epoch,
        "scores": {},
    }
    for path in score:
        report = perplexity(output_dir / "model", path, device=device)
        summary["scores"][path.name] = report.perplexity.to_dict()
        msg.good(f"{path}: perplexity {report.perplexity.mean:.2f}")
    with atomic_path(output_dir / "budget_run.json") as tmp:
        tmp.write_text(json.dumps(summary, indent=2), encoding="utf8")
    return summary


def _say_if_ignored(output_dir: Path, steps: int, planned: dict, minutes: float, max_epochs: Optional[int]) -> None:
    """Warn when this call's budget is not the one the run in `output_dir` was planned for:
    its steps stand (a schedule cannot change its length), so the new budget is ignored."""
    if "minutes" not in planned:
        msg.warn(
            f"The budget of {output_dir} was not recorded: --minutes {minutes:g} and --max-epochs {max_epochs} "
            f"are not checked against it; the run continues to its {steps:,} steps"
        )
        return
    asked = {"--minutes": minutes, "--max-epochs": max_epochs}
    before = {"--minutes": planned["minutes"], "--max-epochs": planned.get("max_epochs")}
    changed = [f"{key} {asked[key]} (planned: {before[key]})" for key in asked if asked[key] != before[key]]
    if changed:
        msg.warn(
            f"Ignoring {', '.join(changed)}: {output_dir} holds a run planned for that budget as "
            f"{steps:,} steps, and a schedule cannot change its length once it has started. For a new "
            f"budget, start a new OUTPUT_DIR."
        )


def probe(config_path: Path, output_dir: Path, minutes: float, device: str, max_epochs: Optional[int], overrides: dict):
    """The steps `minutes` allow at the speed of a short run of the config on this machine.
    RETURNS: (steps, what the probe measured)."""
    probe_dir = output_dir.parent / f".{output_dir.name}.probe"
    shutil.rmtree(probe_dir, ignore_errors=True)
    step_times: List[float] = []
    last = [time.perf_counter()]

    def clock(state, lm):
        now = time.perf_counter()
        step_times.append(now - last[0])
        last[0] = now

    probe_overrides = {
        **overrides,
        "training.max_steps": PROBE_STEPS,
        "training.eval_every": 0,
        "training.checkpoint_every": PROBE_STEPS,
        "training.max_epochs": 0,
    }
    result = pretrain(config_path, probe_dir, overrides=probe_overrides, device=device, progress=False, on_step=clock)
    seconds_per_step = sorted(step_times[PROBE_WARMUP:])[len(step_times[PROBE_WARMUP:]) // 2]
    steps = max(1, int(minutes * 60 / seconds_per_step))
    msg.info(
        f"Probe: {seconds_per_step * 1000:.1f} ms a step (median), {result.tokens_per_second:,.0f} tokens/s; "
        f"{minutes} minutes allow {steps:,} steps"
    )
    if max_epochs and steps > max_epochs * result.steps_per_epoch:
        steps = max_epochs * result.steps_per_epoch
        msg.info(f"Capped at {max_epochs} epochs of {result.steps_per_epoch:,} steps: {steps:,} steps")
    shutil.rmtree(probe_dir, ignore_errors=True)
    return steps, {"seconds_per_step": seconds_per_step, "tokens_per_s": result.tokens_per_second}


app = typer.Typer(add_completion=False)
app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(main)

if __name__ == "__main__":
    run_app(app)
