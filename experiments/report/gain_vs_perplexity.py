"""The downstream gain of ELMo against the biLM's perplexity on the task's text: one point per biLM.

    python -m experiments.report.gain_vs_perplexity docs/results/v2eval/gain_vs_perplexity_ner.png ents_f \\
        metrics/v2eval/ner_baseline \\
        "v1=metrics/v1_tasks/task_ner.json:metrics/v2eval/ner_elmo_v1" \\
        "v2=metrics/v2_tasks/task_ner.json:metrics/v2eval/ner_elmo_v2" \\
        "v2 tuned=training/v2eval/bilm_v2_tuned_train/model/pretrain.json:metrics/v2eval/ner_elmo_v2_tuned_train"

Each point is ``LABEL=PERPLEXITY_JSON:METRICS_DIR``: the perplexity file is what ``python -m
spacy_elmo perplexity … --output`` writes (``{"mean": …}``) or a pretraining run's ``pretrain.json``
(its dev perplexity, ``{"dev": {"mean": …}}``), on the task's dev text; the metrics folder holds
the ELMo runs' ``seedN.json`` (``experiments.demo.evaluate_seeds``). Gains are paired by seed with
the baseline's folder (bootstrap 95% interval, sign-flip p; ``comparison.gains``). Prints the table
and writes the plot (perplexity on a log scale).
"""

import json
from pathlib import Path
from typing import Dict, List, Tuple

import typer

from experiments.errors import run_main
from experiments.report.comparison import gains, md_table, mean_std, mean_text, reduction_text, save_figure
from experiments.report.paired import scores


def perplexity_of(path: Path) -> float:
    """The mean (forward and backward) perplexity a perplexity file or a pretrain.json records."""
    record = json.loads(path.read_text(encoding="utf8"))
    for found in (record, record.get("dev") if isinstance(record, dict) else None):
        if isinstance(found, dict) and isinstance(found.get("mean"), (int, float)):
            return float(found["mean"])
    raise typer.BadParameter(
        f'{path} records no perplexity: expected {{"mean": …}} (spacy_elmo perplexity '
        f'--output) or {{"dev": {{"mean": …}}}} (a pretraining run\'s pretrain.json)'
    )


def parse_point(text: str) -> Tuple[str, Path, Path]:
    label, sep, rest = text.partition("=")
    perplexity, colon, metrics = rest.rpartition(":")
    if not (sep and colon and label and perplexity and metrics):
        raise typer.BadParameter(f"expected LABEL=PERPLEXITY_JSON:METRICS_DIR, got {text!r}")
    return label, Path(perplexity), Path(metrics)


def collect(key: str, baseline: Path, points: List[str]) -> List[Dict[str, object]]:
    base = scores(baseline, key)
    rows = []
    for label, perplexity_file, metrics in map(parse_point, points):
        elmo = scores(metrics, key)
        row = {
            "baseline": {**mean_std(list(base.values())), "by_seed": base},
            "elmo": {**mean_std(list(elmo.values())), "by_seed": elmo},
        }
        rows.append(
            {"label": label, "perplexity": perplexity_of(perplexity_file), "score": row["elmo"], "gain": gains(row)}
        )
    return rows


def plot(rows: List[Dict[str, object]], key: str, output: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: matplotlib's backend is left alone

    figure = Figure(figsize=(6, 4))
    axes = figure.subplots()
    for row in rows:
        gain = row["gain"]
        low, high = gain.get("ci95_low", gain["absolute"]), gain.get("ci95_high", gain["absolute"])
        axes.errorbar(
            [row["perplexity"]],
            [gain["absolute"]],
            yerr=[[gain["absolute"] - low], [high - gain["absolute"]]],
            fmt="o",
            capsize=3,
        )
        axes.annotate(
            row["label"],
            (row["perplexity"], gain["absolute"]),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize="small",
        )
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("biLM perplexity on the task's dev text")
    axes.set_ylabel(f"test {key} gain over the baseline (95% CI)")
    save_figure(figure, output)


def main(
    output: Path = typer.Argument(..., dir_okay=False, help="The plot to write (.png)"),
    key: str = typer.Argument(..., help="The score, e.g. ents_f, cats_macro_f"),
    baseline: Path = typer.Argument(..., exists=True, file_okay=False, help="The baseline's metrics folder"),
    points: List[str] = typer.Argument(..., help="LABEL=PERPLEXITY_JSON:METRICS_DIR, one per biLM"),
) -> None:
    rows = sorted(collect(key, baseline, points), key=lambda r: r["perplexity"])
    table = []
    for row in rows:
        gain = row["gain"]
        interval = (
            f" [{gain['ci95_low']:+.2f}, {gain['ci95_high']:+.2f}], p {gain['sign_flip_p']:.2f}"
            if "sign_flip_p" in gain
            else ""
        )
        table.append(
            [
                row["label"],
                f"{row['perplexity']:.1f}",
                mean_text(row["score"]),
                f"{gain['absolute']:+.2f}{interval}",
                reduction_text(gain),
                str(row["score"]["n"]),
            ]
        )
    typer.echo(
        md_table(["biLM", "perplexity", key, "gain [95% CI], sign-flip p", "rel. error reduction", "seeds"], table)
    )
    plot(rows, key, output)
    typer.echo(f"wrote {output}")


if __name__ == "__main__":
    run_main(main)
