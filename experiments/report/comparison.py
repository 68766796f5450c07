"""Collate the runs into the results table and plots (mean ± std over seeds).

Usage: python -m experiments.report.comparison METRICS_DIR TRAINING_DIR OUTPUT_DIR
    [--perplexity FILE.json] [--title TEXT]

Reads METRICS_DIR/<task>_<variant>/seed*.json (variant: baseline or elmo),
the learned layer weights of TRAINING_DIR/<task>_elmo/seed*/model-best, and
the biLM's perplexity; writes OUTPUT_DIR/results.md, results.json,
scores.png and layer_weights.png. Like Table 1 of Peters et al. (2018), each
row gives the baseline, baseline + ELMo, the absolute gain and the relative
error reduction, 100 · (err_base − err_elmo) / err_base with err = 100 − score.
A run of two seeds or more shows mean ± std and its gain a paired 95% interval
and sign-flip p; a run of one seed shows its score alone, and the table and the
plot then say that one seed is not a result (``ONE_SEED_CAVEAT``).
"""

import json
import statistics
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy
import typer
from wasabi import MarkdownRenderer

from experiments.errors import run_app
from experiments.records import read_seed_score
from spacy_elmo.layer_mixes import mean_over_runs, plot_mixes

TASKS = {
    # task: (metric key in the metrics JSON, how to call it)
    "ner": ("ents_f", "NER F1 (WNUT-16 tweets)"),
    "sentiment5": ("cats_accuracy", "5-class sentiment accuracy (RT snippets)"),
    "textcat": ("cats_accuracy", "Sentence polarity accuracy"),
    "pos": ("tag_acc", "POS accuracy (OANC, the biLM's held-out text)"),
}
# The runs compared with the baseline: + ELMo, and ablations where they were run.
VARIANTS = {
    "elmo": "+ ELMo",
    "elmo_untuned": "+ ELMo, biLM not tuned to the task",
}
BOOTSTRAP_SAMPLES = 10000
# The sign-flip test is exact (all 2^n sign patterns) up to this many pairs and a seeded
# Monte-Carlo test beyond: 2^16 patterns take milliseconds, 2^24 took 91 s and 3 GiB.
EXACT_MAX_PAIRS = 16
SIGN_FLIP_DRAWS = 100_000  # standard error of p at most 0.0016 (at p = 0.5), 0.0007 at p = 0.05
SIGN_FLIP_SEED = 0
SIGN_FLIP_CHUNK = 10_000  # draws held in memory at once
# The pipeline component whose listener a task's mix is in.
COMPONENTS = {"ner": "ner", "sentiment5": "textcat", "textcat": "textcat", "pos": "tagger"}
# Where a run has one seed: under the table, and (shorter) on the plot.
CV_STUDY = "docs/results/cv/results.md"
ONE_SEED_CAVEAT = (
    f"**One seed: not a result.** A single run per side has no spread, no interval and no test; "
    f"see the cross-validated study ({CV_STUDY}) for what ELMo measurably adds."
)
ONE_SEED_PLOT_CAVEAT = f"one seed: not a result; see the cross-validated study, {CV_STUDY}"
COLOURS = ["#999999", "#3b75af", "#9ecae1"]  # baseline, then VARIANTS in order


def mean_std(values: List[float]) -> Dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def spread_text(mean: float, std: Optional[float], digits: int = 2) -> str:
    """A mean as the reports print it: with ± its standard deviation, or alone where there is none (None)."""
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def mean_text(stats: Dict[str, float], digits: int = 2) -> str:
    """A run's score over seeds (`mean_std`): mean ± std over two seeds or more, the score alone for one."""
    return spread_text(stats["mean"], stats["std"] if stats["n"] > 1 else None, digits)


def one_seed(scores: Dict[str, Dict[str, Dict[str, float]]]) -> bool:
    """Whether some run of the table has a single seed (no spread, no paired interval, no test)."""
    return any(run["n"] < 2 for row in scores.values() for run in row.values())


def collect_scores(metrics_dir: Path) -> Dict[str, Dict[str, Dict[str, float]]]:
    """{task: {variant: {"mean", "std", "n", "seeds"}}} in percent."""
    results: Dict[str, Dict[str, Dict[str, float]]] = {}
    for task, (key, _) in TASKS.items():
        for variant in ("baseline", *VARIANTS):
            files = sorted((metrics_dir / f"{task}_{variant}").glob("seed*.json"))
            by_seed = {f.stem: read_seed_score(f, key) for f in files}
            if by_seed:
                values = list(by_seed.values())
                results.setdefault(task, {})[variant] = {**mean_std(values), "seeds": values, "by_seed": by_seed}
    return results


def gains(
    row: Dict[str, Dict[str, float]], variant: str = "elmo", against: str = "baseline"
) -> Optional[Dict[str, float]]:
    """The variant against another run of the row (the baseline): absolute gain, relative
    error reduction, a bootstrap 95% interval of the mean difference and the two-sided
    sign-flip p-value (`sign_flip_test`), all over the seeds both have (paired by seed); over all seeds of each
    only where they share none."""
    if against not in row or variant not in row:
        return None
    common = sorted(row[variant]["by_seed"].keys() & row[against]["by_seed"].keys())
    if common:  # the gain, its interval and its test over the same seeds, even where one run has more
        base = statistics.fmean(row[against]["by_seed"][s] for s in common)
        other = statistics.fmean(row[variant]["by_seed"][s] for s in common)
    else:
        base, other = row[against]["mean"], row[variant]["mean"]
    error_base = 100.0 - base
    # Against a perfect reference there is no error to reduce: undefined, not 0.
    reduction = 100.0 * (error_base - (100.0 - other)) / error_base if error_base else None
    differences = numpy.asarray([row[variant]["by_seed"][s] - row[against]["by_seed"][s] for s in common])
    # pairs: the seeds compared (0: the means of runs that share no seed, unpaired)
    return {
        "absolute": other - base,
        "relative_error_reduction": reduction,
        "pairs": len(common),
        **paired_test(differences),
    }


def reduction_text(gain: Dict[str, Any]) -> str:
    """A gain's relative error reduction as the reports print it ("n/a" against a perfect reference)."""
    value = gain["relative_error_reduction"]
    return "n/a" if value is None else f"{value:+.1f}%"


def paired_test(differences: numpy.ndarray, exact_max_pairs: int = EXACT_MAX_PAIRS) -> Dict[str, float]:
    """Bootstrap 95% interval of the mean paired difference, and the two-sided sign-flip
    p-value (`sign_flip_p`): exact up to `exact_max_pairs` pairs, a seeded Monte-Carlo
    estimate beyond, with its method and its standard error (0 when exact) beside it."""
    n = len(differences)
    if n < 2:
        return {}
    rng = numpy.random.default_rng(0)
    means = rng.choice(differences, size=(BOOTSTRAP_SAMPLES, n), replace=True).mean(axis=1)
    low, high = numpy.percentile(means, [2.5, 97.5])
    test = sign_flip_test(differences, exact_max_pairs)
    return {"ci95_low": float(low), "ci95_high": float(high), **test, "pairs": n}


def sign_flip_test(
    differences: numpy.ndarray,
    exact_max_pairs: int = EXACT_MAX_PAIRS,
    draws: int = SIGN_FLIP_DRAWS,
    seed: int = SIGN_FLIP_SEED,
) -> Dict[str, object]:
    """The two-sided sign-flip test of a mean paired difference of zero.

    Up to `exact_max_pairs` pairs every one of the 2^n sign patterns is tried (the exact p);
    beyond, `draws` patterns drawn with a fixed `seed` give p = (1 + b) / (1 + draws),
    b the draws at least as extreme as observed (never 0, a valid p), and its standard error
    sqrt(p (1 - p) / draws). Returns `sign_flip_p`, `sign_flip_se` and `sign_flip_method`.
    """
    differences = numpy.asarray(differences, dtype=float)
    n = len(differences)
    observed = abs(differences.mean()) - 1e-12  # the observed pattern counts as at least as extreme
    if n <= exact_max_pairs:
        patterns = numpy.arange(2**n, dtype=numpy.int64)[:, None] >> numpy.arange(n)
        signs = 1.0 - 2.0 * (patterns & 1)
        p_value = float(numpy.mean(numpy.abs(signs @ differences) / n >= observed))
        return {"sign_flip_p": p_value, "sign_flip_se": 0.0, "sign_flip_method": "exact"}
    rng = numpy.random.default_rng(seed)
    extreme = 0
    for start in range(0, draws, SIGN_FLIP_CHUNK):
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(min(SIGN_FLIP_CHUNK, draws - start), n))
        extreme += int(numpy.count_nonzero(numpy.abs(signs @ differences) / n >= observed))
    p_value = (1 + extreme) / (1 + draws)
    return {
        "sign_flip_p": p_value,
        "sign_flip_se": (p_value * (1 - p_value) / draws) ** 0.5,
        "sign_flip_method": f"monte carlo ({draws} draws, seed {seed})",
    }


def format_p(gain: Dict[str, object], digits: int = 3) -> str:
    """A comparison's sign-flip p as text: exact, or a Monte-Carlo estimate with its standard error."""
    text = f"{gain['sign_flip_p']:.{digits}f}"
    if gain.get("sign_flip_se"):
        text += f" ± {gain['sign_flip_se']:.{digits + 1}f} (Monte Carlo)"
    return text


def collect_mixes(training_dir: Path) -> Dict[str, List[List[float]]]:
    """{task: [softmax(s) of each seed's model]} from the ELMo runs."""
    import spacy

    from spacy_elmo.layer_mixes import listener_mixes

    mixes: Dict[str, List[List[float]]] = {}
    for task in TASKS:
        component = COMPONENTS.get(task, task)
        for model in sorted((training_dir / f"{task}_elmo").glob("seed*/model-best")):
            found = listener_mixes(spacy.load(model))
            if component in found:
                mixes.setdefault(task, []).append(found[component]["weights"])
    return mixes


def md_table(header: List[str], rows: List[List[str]]) -> str:
    """A Markdown table (wasabi's renderer)."""
    return MarkdownRenderer().table(rows, header)


def comparison_cells(g: Optional[Dict[str, Any]]) -> List[str]:
    """A comparison's absolute gain (with its 95% interval where it has one), relative error
    reduction and sign-flip p ("n/a" without a test); "—" each where nothing was compared."""
    if not g:
        return ["—"] * 3
    interval = f" [{g['ci95_low']:+.2f}, {g['ci95_high']:+.2f}]" if "ci95_low" in g else ""
    return [f"{g['absolute']:+.2f}{interval}", reduction_text(g), format_p(g) if "sign_flip_p" in g else "n/a"]


def markdown_table(scores, perplexity: Optional[dict]) -> str:
    """The results table; the interval and the sign-flip p only where some comparison is paired over
    two seeds or more, and ``ONE_SEED_CAVEAT`` under it where some run has one seed."""
    compared = [
        (task, row, variant, gains(row, variant))
        for task, row in scores.items()
        for variant in VARIANTS
        if variant in row
    ]
    tested = any(g and "ci95_low" in g for *_, g in compared)
    header = [
        "task",
        "baseline",
        "run",
        "score",
        "absolute gain [95% CI]" if tested else "absolute gain",
        "relative error reduction",
        *(["sign-flip p"] if tested else []),
        "seeds",
    ]
    rows = []
    for task, row, variant, g in compared:
        gain, reduction, p_value = comparison_cells(g)
        base = mean_text(row["baseline"]) if "baseline" in row else "—"
        rows.append(
            [
                TASKS[task][1],
                base,
                VARIANTS[variant],
                mean_text(row[variant]),
                gain,
                reduction,
                *([p_value] if tested else []),
                str(max(run["n"] for run in row.values())),
            ]
        )
    lines = [md_table(header, rows)]
    if one_seed(scores):
        lines += ["", ONE_SEED_CAVEAT]
    if perplexity:
        lines += [
            "",
            f"biLM perplexity on held-out text ({perplexity.get('tokens', '?')} tokens): "
            f"forward {perplexity['forward']:.1f}, backward {perplexity['backward']:.1f}, "
            f"mean {perplexity['mean']:.1f}.",
        ]
    return "\n".join(lines) + "\n"


def collect_tuning(metrics_dir: Path) -> Dict[str, Dict[str, float]]:
    """{task: {"before", "after"}}: the biLM's mean perplexity on the task's dev text before
    and after tuning it to the task's training text, where both were measured."""
    tuning = {}
    for task in TASKS:
        files = [metrics_dir / f"bilm_{task}_{when}.json" for when in ("before", "after")]
        if all(f.exists() for f in files):
            before, after = (json.loads(f.read_text())["mean"] for f in files)
            tuning[task] = {"before": before, "after": after}
    return tuning


def tuning_lines(tuning: Dict[str, Dict[str, float]]) -> str:
    if not tuning:
        return ""
    lines = ["", "biLM perplexity on each task's dev text, before and after tuning it to the task's training text:"]
    lines += [f"- {TASKS[t][1]}: {v['before']:.1f} → {v['after']:.1f}" for t, v in tuning.items()]
    return "\n".join(lines) + "\n"


def save_figure(figure, output: Path) -> None:
    """Lay a matplotlib figure out and write it to `output`, its folder made if needed."""
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=120)


def scores_figure(scores):
    """One panel per task: a bar per run from 0 to its mean score, each seed a dot, mean ± std as an
    error bar over two seeds or more (none for one); ``ONE_SEED_PLOT_CAVEAT`` above where a run has one seed.
    A `matplotlib.figure.Figure` (no pyplot: matplotlib's backend is left alone)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.2 * max(1, len(scores)), 3.4))
    axes = fig.subplots(1, len(scores), squeeze=False)
    for ax, (task, row) in zip(axes[0], scores.items()):
        plot_task(ax, task, row)
    if one_seed(scores):  # wrapped to the figure's width (about 14 characters an inch at 8 points)
        caveat = textwrap.fill(ONE_SEED_PLOT_CAVEAT, width=int(14 * fig.get_figwidth()), break_on_hyphens=False)
        fig.suptitle(caveat, fontsize=8, color="#b22222")
    return fig


def plot_task(ax, task: str, row: Dict[str, Dict[str, Any]]) -> None:
    """A task's runs on one axis that starts at 0 (scores in percent, at most 100)."""
    variants = [v for v in ("baseline", *VARIANTS) if v in row]
    xs = numpy.arange(len(variants))
    ax.bar(xs, [row[v]["mean"] for v in variants], color=COLOURS[: len(variants)])
    for x, v in zip(xs, variants):
        ax.scatter([x] * len(row[v]["seeds"]), row[v]["seeds"], color="black", s=10, zorder=3)
        if row[v]["n"] > 1:
            ax.errorbar(x, row[v]["mean"], yerr=row[v]["std"], fmt="none", ecolor="black", capsize=6)
    top = max(max(*row[v]["seeds"], row[v]["mean"] + row[v]["std"]) for v in variants)
    ax.set_ylim(0.0, min(100.0, top + 5.0))
    ax.set_xticks(xs)
    ax.set_xticklabels(variants)
    ax.set_title(TASKS[task][1], fontsize=9)
    ax.set_ylabel("score (%)")


def plot_scores(scores, output: Path) -> None:
    """Write `scores_figure` to `output`."""
    save_figure(scores_figure(scores), output)


def main(
    metrics_dir: Path = typer.Argument(..., exists=True, file_okay=False),
    training_dir: Path = typer.Argument(..., exists=True, file_okay=False),
    output_dir: Path = typer.Argument(...),
    perplexity: Optional[Path] = typer.Option(None, exists=True, dir_okay=False),
    title: str = typer.Option("Results", help="Heading of the table"),
) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    scores = collect_scores(metrics_dir)
    if not scores:
        raise SystemExit(f"No metrics found under {metrics_dir}: run the evaluate-* commands first.")
    ppl = json.loads(perplexity.read_text()) if perplexity else None
    mixes = collect_mixes(training_dir)
    tuning = collect_tuning(metrics_dir)
    table = markdown_table(scores, ppl) + tuning_lines(tuning)
    (output_dir / "results.md").write_text(f"### {title}\n\n{table}", encoding="utf8")
    report = {
        "scores": scores,
        "gains": {t: {v: gains(r, v) for v in VARIANTS if v in r} for t, r in scores.items()},
        "layer_weights": mixes,
        "perplexity": ppl,
        "tuning_perplexity": tuning,
    }
    (output_dir / "results.json").write_text(json.dumps(report, indent=2), encoding="utf8")
    plot_scores(scores, output_dir / "scores.png")
    plot_mixes(mean_over_runs(mixes), output_dir / "layer_weights.png", title="Layer weights each task learned")
    print(table)


def cli(argv: List[str]) -> None:
    app = typer.Typer(add_completion=False)
    app.command()(main)
    app(argv)


if __name__ == "__main__":
    run_app(cli)
