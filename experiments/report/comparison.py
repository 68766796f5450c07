"""Collate the runs into the results table and plots (mean ± std over seeds).

Usage: python -m experiments.report.comparison METRICS_DIR TRAINING_DIR OUTPUT_DIR
    [--perplexity FILE.json] [--title TEXT]

Reads METRICS_DIR/<task>_<variant>/seed*.json (variant: baseline or elmo),
the learned layer weights of TRAINING_DIR/<task>_elmo/seed*/model-best, and
the biLM's perplexity; writes OUTPUT_DIR/results.md, results.json,
scores.png and layer_weights.png. Like Table 1 of Peters et al. (2018), each
row gives the baseline, baseline + ELMo, the absolute gain and the relative
error reduction, 100 · (err_base − err_elmo) / err_base with err = 100 − score.
"""
import json
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy
import typer
from wasabi import MarkdownRenderer

from experiments.errors import run_app
from experiments.records import read_seed_score
from spacy_elmo.inspect import mean_over_runs, plot_mixes

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


def mean_std(values: List[float]) -> Dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


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


def gains(row: Dict[str, Dict[str, float]], variant: str = "elmo", against: str = "baseline") -> Optional[Dict[str, float]]:
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
    return {"absolute": other - base, "relative_error_reduction": reduction, "pairs": len(common),
            **paired_test(differences)}


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
    differences: numpy.ndarray, exact_max_pairs: int = EXACT_MAX_PAIRS, draws: int = SIGN_FLIP_DRAWS,
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

    from spacy_elmo.inspect import listener_mixes

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


def markdown_table(scores, perplexity: Optional[dict]) -> str:
    header = ["task", "baseline", "run", "score", "absolute gain [95% CI]", "relative error reduction",
              "sign-flip p", "seeds"]
    rows = []
    for task, row in scores.items():
        label = TASKS[task][1]
        base = f"{row['baseline']['mean']:.2f} ± {row['baseline']['std']:.2f}" if "baseline" in row else "—"
        for variant, name in VARIANTS.items():
            if variant not in row:
                continue
            g = gains(row, variant)
            score = f"{row[variant]['mean']:.2f} ± {row[variant]['std']:.2f}"
            if g:
                interval = f" [{g['ci95_low']:+.2f}, {g['ci95_high']:+.2f}]" if "ci95_low" in g else ""
                gain, reduction = f"{g['absolute']:+.2f}{interval}", reduction_text(g)
                p_value = format_p(g) if "sign_flip_p" in g else "n/a"
            else:
                gain = reduction = p_value = "—"
            n = max(row[v]["n"] for v in row)
            rows.append([label, base, name, score, gain, reduction, p_value, str(n)])
    lines = [md_table(header, rows)]
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


def plot_scores(scores, output: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: matplotlib's backend is left alone

    fig = Figure(figsize=(3.2 * max(1, len(scores)), 3.2))
    axes = fig.subplots(1, len(scores), squeeze=False)
    for ax, (task, row) in zip(axes[0], scores.items()):
        variants = [v for v in ("baseline", *VARIANTS) if v in row]
        means = [row[v]["mean"] for v in variants]
        stds = [row[v]["std"] for v in variants]
        ax.bar(variants, means, yerr=stds, capsize=6, color=["#999999", "#3b75af", "#9ecae1"][: len(variants)])
        for v, x in zip(variants, range(len(variants))):
            ax.scatter([x] * len(row[v]["seeds"]), row[v]["seeds"], color="black", s=10, zorder=3)
        low = min(min(row[v]["seeds"]) for v in variants)
        ax.set_ylim(max(0.0, low - 10.0), min(100.0, max(means) + max(stds) + 5.0))
        ax.set_title(TASKS[task][1], fontsize=9)
        ax.set_ylabel("score (%)")
    save_figure(fig, output)


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
