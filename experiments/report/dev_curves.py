"""Dev curves of runs trained once per seed: mean ± std of a dev score at each evaluation step.

    python -m experiments.report.dev_curves OUTPUT.png ents_f training/v2eval/ner_baseline_converged \\
        training/v2eval/ner_elmo_v2_converged

Reads RUN_DIR/seed*/train_log.jsonl (one line per evaluation, as ``experiments.demo.train_seeds``
keeps it), prints a table of the mean dev score per step (and over how many seeds: spaCy stops a run
early after ``training.patience`` steps without a better dev score) and, for each run, the step at
which its mean curve over all seeds first came within ``--within`` points of its own best (where it
stops improving), and writes the plot. Scores are in percent.
"""

import json
from pathlib import Path
from typing import Dict, List

import numpy
import typer

from experiments.engine.execute import TRAIN_LOG
from experiments.report.comparison import md_table, save_figure


def dev_scores(run_dir: Path, key: str) -> Dict[str, Dict[int, float]]:
    """{seed folder: {step: dev score in percent}} of a run's seeds; exits with a message if none has a log.

    spaCy's console logger writes the scores already multiplied by 100."""
    curves = {}
    for log in sorted(run_dir.glob(f"seed*/{TRAIN_LOG}")):
        steps = {}
        for line in log.read_text(encoding="utf8").splitlines():
            if line.strip():
                entry = json.loads(line)
                if key not in entry["scores"]:
                    raise typer.BadParameter(f"{log} has no dev score '{key}' (it has: {', '.join(entry['scores'])})")
                steps[int(entry["step"])] = float(entry["scores"][key])
        curves[log.parent.name] = steps
    if not curves:
        raise typer.BadParameter(f"{run_dir} has no seed*/{TRAIN_LOG}: train it with experiments.demo.train_seeds")
    return curves


def mean_curve(curves: Dict[str, Dict[int, float]]) -> Dict[int, List[float]]:
    """{step: [mean, std, seeds]} at every step some seed was evaluated at.

    A run that spaCy stopped early (``training.patience``) has no scores after its stop, so the
    later steps' means are over fewer seeds; the table and the plot say how many.
    """
    rows = {}
    for step in sorted(set.union(*(set(c) for c in curves.values()))):
        values = numpy.array([c[step] for c in curves.values() if step in c])
        rows[step] = [float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0, len(values)]
    return rows


def plateau_step(curve: Dict[int, List[float]], within: float) -> int:
    """The first step whose mean is within `within` points of the best mean, over the steps every
    seed was evaluated at."""
    seeds = max(n for _, _, n in curve.values())
    shared = {step: mean for step, (mean, _, n) in curve.items() if n == seeds}
    best = max(shared.values())
    return min(step for step, mean in shared.items() if mean >= best - within)


def plot(curves: Dict[str, Dict[int, List[float]]], key: str, output: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: matplotlib's backend is left alone

    figure = Figure(figsize=(6, 4))
    axes = figure.subplots()
    for name, curve in curves.items():
        steps = list(curve)
        mean = numpy.array([curve[s][0] for s in steps])
        std = numpy.array([curve[s][1] for s in steps])
        axes.plot(steps, mean, label=f"{name} ({curve[steps[0]][2]} seeds; fewer after early stops)")
        axes.fill_between(steps, mean - std, mean + std, alpha=0.2)
    axes.set_xlabel("training step")
    axes.set_ylabel(f"dev {key} (mean ± std over seeds)")
    axes.legend(fontsize="small")
    save_figure(figure, output)


def main(
    output: Path = typer.Argument(..., dir_okay=False, help="The plot to write (.png)"),
    key: str = typer.Argument(..., help="The dev score, e.g. ents_f, cats_macro_f"),
    run_dirs: List[Path] = typer.Argument(..., exists=True, file_okay=False),
    within: float = typer.Option(0.5, help="Points from the best mean that count as stopped improving"),
) -> None:
    curves = {run_dir.name: mean_curve(dev_scores(run_dir, key)) for run_dir in run_dirs}
    steps = sorted(set.union(*(set(c) for c in curves.values())))
    rows = [
        [str(step)]
        + [f"{c[step][0]:.2f} ± {c[step][1]:.2f} ({c[step][2]})" if step in c else "" for c in curves.values()]
        for step in steps
    ]
    typer.echo(md_table(["step", *curves], rows))
    for name, curve in curves.items():
        seeds = max(n for _, _, n in curve.values())
        best = max(m for m, _, n in curve.values() if n == seeds)
        typer.echo(
            f"{name}: best mean dev {key} over all {seeds} seeds {best:.2f}, "
            f"within {within} of it from step {plateau_step(curve, within)}"
        )
    plot(curves, key, output)
    typer.echo(f"wrote {output}")


if __name__ == "__main__":
    typer.run(main)
