"""Collate the runs of ``experiments.studies.curves``: learning curves, the four-row tables, the layer probe.

    python -m experiments.report.curves metrics/curves reports/curves [--cost benchmarks/results/bench_tasks.json]

Writes OUTPUT_DIR/results.md and results.json, curves_<task>.png (score against
the share of the training split, log x, mean ± std over seeds) and
layer_weights.png (the learned mix of NER, sentiment and the POS probe). Gains
are paired by seed, with report.py's bootstrap interval and sign-flip p.
"""

import json
from collections import defaultdict
from pathlib import Path
from typing import Dict, Optional

import typer

from experiments.errors import run_main
from experiments.report.comparison import TASKS as REPORT_TASKS
from experiments.report.comparison import gains, md_table, mean_std, mean_text, reduction_text
from spacy_elmo.layer_mixes import layer_names, mean_over_runs, plot_mixes

TITLES = {task: label for task, (_, label) in REPORT_TASKS.items()}
# task: the component whose listener learns the task's layer mix (as the task's configs name it)
LISTENERS = {"ner": "ner", "sentiment5": "textcat", "pos": "tagger"}
ROWS = {  # the four-row tables: (row, its baseline)
    "baseline": ("baseline", None),
    "elmo": ("+ ELMo", "baseline"),
    "glove": ("GloVe", None),
    "glove_elmo": ("GloVe + ELMo", "glove"),
}
PROBES = {
    "baseline": "no ELMo: lexical features + CNN encoder (reference)",
    "probe_layer0": "ELMo token layer (char CNN) only",
    "probe_layer1": "ELMo LSTM 1 only",
    "probe_layer2": "ELMo LSTM 2 only",
    "probe_mix": "ELMo, learned mix of the 3 layers",
}


def collect(metrics_dir: Path):
    """{task: {share: {variant: stats with by_seed}}} and {task: {variant: [mix weights]}} (share 1)."""
    by_seed: Dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    mixes: Dict = defaultdict(lambda: defaultdict(list))
    docs: Dict = defaultdict(dict)
    for path in sorted(metrics_dir.glob("*/*/f*_seed*.json")):
        record = json.loads(path.read_text())
        if "labels" in record:  # an engine record (experiments.engine.run.RunRecord)
            labels = record["labels"]
            task, variant, share, seed = labels["task"], labels["variant"], float(labels["share"]), int(labels["seed"])
            train_docs = record["sizes"]["train"]
        else:  # a flat record: task, variant, share, seed and train_docs at the top
            task, variant, share, seed = record["task"], record["variant"], record["share"], record["seed"]
            train_docs = record["train_docs"]
        component, (key, _) = LISTENERS[task], REPORT_TASKS[task]
        by_seed[task][share][variant][f"seed{seed}"] = 100.0 * float(record["scores"][key])
        docs[task][share] = train_docs
        if share == 1.0 and component in record.get("mixes", {}):
            mixes[task][variant].append(record["mixes"][component]["weights"])
    scores = {
        task: {
            share: {v: {**mean_std(list(s.values())), "by_seed": s} for v, s in variants.items()}
            for share, variants in shares.items()
        }
        for task, shares in by_seed.items()
    }
    return scores, mixes, docs


def fmt(stats: Optional[dict]) -> str:
    return mean_text(stats) if stats else "–"


def fmt_gain(gain: Optional[dict]) -> str:
    if not gain:
        return "–"
    text = f"{gain['absolute']:+.2f}"
    if "ci95_low" in gain:
        text += f" [{gain['ci95_low']:+.2f}, {gain['ci95_high']:+.2f}], p = {gain['sign_flip_p']:.2f}"
    return text


def curve_table(task: str, shares: dict, docs: dict) -> str:
    rows = []
    for share in sorted(shares):
        row = shares[share]
        n = min(row[v]["n"] for v in ("baseline", "elmo") if v in row)
        rows.append(
            [
                f"{share:.0%}",
                f"{docs[share]:,}",
                fmt(row.get("baseline")),
                fmt(row.get("elmo")),
                fmt_gain(gains(row, "elmo")),
                str(n),
            ]
        )
    header = ["share of train", "docs", "baseline", "+ ELMo", "gain [95% CI], sign-flip p", "seeds"]
    return f"**{TITLES[task]}**: learning curve\n\n" + md_table(header, rows)


def four_row_table(task: str, row: dict) -> str:
    rows = []
    for variant, (label, against) in ROWS.items():
        if variant not in row:
            continue
        gain = gains(row, variant, against) if against else None
        reduction = reduction_text(gain) if gain else "–"
        vs = ROWS[against][0] if against else "–"
        rows.append([label, fmt(row[variant]), vs, fmt_gain(gain), reduction, str(row[variant]["n"])])
    header = ["representation", "score", "vs", "gain [95% CI], sign-flip p", "rel. error reduction", "seeds"]
    return f"**{TITLES[task]}**: whole training split\n\n" + md_table(header, rows)


def probe_table(row: dict, mixes: dict) -> str:
    rows = [[label, fmt(row[v]), str(row[v]["n"])] for v, label in PROBES.items() if v in row]
    lines = [md_table(["tagger input", "accuracy", "seeds"], rows)]
    if mixes.get("probe_mix"):
        runs = mixes["probe_mix"]
        mean = [sum(w[j] for w in runs) / len(runs) for j in range(len(runs[0]))]
        lines += [
            "",
            "Learned mix of the probe (softmax(s), mean over seeds): "
            + ", ".join(f"{name} {w:.3f}" for name, w in zip(layer_names(len(mean)), mean)),
        ]
    return "\n".join(lines)


def cost_table(cost: dict) -> str:
    rows = [
        [task, variant, f"{c['train_wps_first']:,.0f}", f"{c['train_wps_cached']:,.0f}", f"{c['predict_wps']:,.0f}"]
        for task, variants in cost["tasks"].items()
        for variant, c in variants.items()
    ]
    header = ["task", "run", "train words/s (first epoch)", "train words/s (cached epochs)", "predict words/s"]
    return md_table(header, rows)


def plot_curves(task: str, shares: dict, output: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: matplotlib's backend is left alone

    fig = Figure(figsize=(4.2, 3.2))
    ax = fig.subplots()
    xs = sorted(shares)
    for variant, colour, label in (("baseline", "#777777", "baseline"), ("elmo", "#3b75af", "+ ELMo")):
        points = [(x, shares[x][variant]) for x in xs if variant in shares[x]]
        means = [s["mean"] for _, s in points]
        stds = [s["std"] for _, s in points]
        share_xs = [100 * x for x, _ in points]
        ax.plot(share_xs, means, marker="o", color=colour, label=label)
        ax.fill_between(
            share_xs,
            [m - s for m, s in zip(means, stds)],
            [m + s for m, s in zip(means, stds)],
            color=colour,
            alpha=0.2,
        )
    ax.set_xscale("log")
    ax.set_xticks([100 * x for x in xs])
    ax.set_xticklabels([f"{100 * x:g}%" for x in xs])
    ax.set_xlabel("share of the training split")
    ax.set_ylabel("test score (%)")
    ax.set_title(TITLES[task], fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(output, dpi=120)


def main(
    metrics_dir: Path = typer.Argument(..., exists=True, file_okay=False),
    output_dir: Path = typer.Argument(...),
    cost: Optional[Path] = typer.Option(None, help="bench_tasks.py's JSON, for the cost table"),
    title: str = typer.Option("Where ELMo helps", help="Heading of results.md"),
) -> None:
    """Write results.md/.json, the learning-curve plots and the three tasks' layer weights."""
    scores, mixes, docs = collect(metrics_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    parts = [f"# {title}", ""]
    for task in ("ner", "sentiment5"):
        if task in scores:
            parts += [
                curve_table(task, scores[task], docs[task]),
                "",
                four_row_table(task, scores[task].get(1.0, {})),
                "",
            ]
            plot_curves(task, scores[task], output_dir / f"curves_{task}.png")
    if "pos" in scores:
        parts += [f"**{TITLES['pos']}**: the layer probe", "", probe_table(scores["pos"][1.0], mixes["pos"]), ""]
    task_mixes = {
        name: mixes[task][variant]
        for name, task, variant in (
            ("NER", "ner", "elmo"),
            ("sentiment", "sentiment5", "elmo"),
            ("POS probe", "pos", "probe_mix"),
        )
        if mixes[task].get(variant)
    }
    plot_mixes(mean_over_runs(task_mixes), output_dir / "layer_weights.png", title="Layer weights each task learned")
    cost_data = json.loads(cost.read_text()) if cost else None
    if cost_data:
        parts += ["**Cost** on " + cost_data["machine"], "", cost_table(cost_data), ""]
    (output_dir / "results.md").write_text("\n".join(parts))
    (output_dir / "results.json").write_text(
        json.dumps(
            {
                "scores": {t: {str(s): v for s, v in shares.items()} for t, shares in scores.items()},
                "mixes": task_mixes,
                "cost": cost_data,
            },
            indent=1,
        )
        + "\n"
    )
    typer.echo("\n".join(parts))


if __name__ == "__main__":
    run_main(main)
