"""The report of the downstream evaluation (``experiments.studies.v2eval``): one table of every
comparison, the dev curves of the converged runs and the learned layer weights.

    python -m experiments.report.v2eval [--metrics metrics/v2eval] [--training training/v2eval] \\
        [--output reports/v2eval]

Each comparison pairs two runs seed by seed (``comparison.gains``: the mean gain, a bootstrap 95%
interval, the relative error reduction and the exact sign-flip p) from their test scores in
METRICS/<run>/seedN.json. A comparison whose runs have not been scored is listed under "Not run
yet" rather than left out; the report says how many seeds each row pairs. Writes results.md,
results.json, dev_curves_<task>.png and layer_weights.png into OUTPUT.
"""

from pathlib import Path
from typing import Dict, List, NamedTuple, Tuple

import srsly
import typer

from experiments.errors import run_main
from experiments.report.comparison import gains, md_table, mean_text, reduction_text
from experiments.report.paired import seed_row
from spacy_elmo.util import atomic_path

# The scores each task is reported by: the test metric and the dev metric of its curves.
KEYS = {"ner": ("ents_f",), "sentiment5": ("cats_macro_f", "cats_accuracy")}
DEV_KEY = {"ner": "ents_f", "sentiment5": "cats_score"}
TASK_NAMES = {"ner": "NER (WNUT-16)", "sentiment5": "5-class sentiment (RT)"}
KEY_NAMES = {"ents_f": "F1", "cats_macro_f": "macro-F", "cats_accuracy": "accuracy"}
# The unlabelled in-domain text each task's biLM was tuned on (a run name's "{domain}").
DOMAIN = {"ner": "tweets", "sentiment5": "reviews"}


class Comparison(NamedTuple):
    section: str
    reference: str  # run names, without the task: "baseline", "elmo_v2", ...
    run: str
    label: str

    def folders(self, metrics: Path, task: str) -> Tuple[Path, Path]:
        """The scores of the task's reference run and run (a run name's "{domain}" filled in)."""
        return metrics / f"{task}_{self.reference}", metrics / f"{task}_{self.run.format(domain=DOMAIN[task])}"


# {section: [(reference, run, label)]}, in the report's order; run names without the task.
SECTIONS = {
    "ELMo against the baseline": [
        ("baseline_converged", "elmo_v2_converged", "+ ELMo, trained to convergence (3,000 steps)"),
        ("glove_converged", "glove_elmo_v2_converged", "+ ELMo, both with GloVe, trained to convergence"),
        ("baseline", "elmo_v2", "+ ELMo, 1,000 steps"),
        ("baseline_bilstm", "elmo_v2_bilstm", "+ ELMo, with a BiLSTM encoder, trained to convergence"),
        ("baseline", "elmo_v2_tuned_{domain}", "+ ELMo, the biLM tuned on unlabelled text of the domain (1,000 steps)"),
        ("baseline", "elmo_v2_tuned_train", "+ ELMo, the biLM tuned on the training split (1,000 steps)"),
    ],
    "Ablations (1,000 steps, against the learned mix)": [
        ("elmo_v2", f"elmo_v2_{name}", label)
        for name, label in (
            ("top_layer", "the top layer alone"),
            ("average", "the plain average"),
            ("lambda1", "λ = 1"),
            ("dropout05", "ELMo dropout 0.5"),
            ("finetuned", "the biLM fine-tuned with the task"),
            ("output", "ELMo at the encoder's output too"),
        )
    ],
    "Static word vectors (trained to convergence)": [
        ("baseline_converged", "glove_converged", "baseline + GloVe"),
    ],
    "Encoders (trained to convergence)": [
        ("baseline_converged", "baseline_bilstm", "baseline: BiLSTM instead of the CNN"),
        ("elmo_v2_converged", "elmo_v2_bilstm", "+ ELMo: BiLSTM instead of the CNN"),
    ],
}
COMPARISONS = tuple(Comparison(section, *row) for section, rows in SECTIONS.items() for row in rows)


def compare(reference: Path, run: Path, key: str) -> Dict[str, object]:
    """Both runs' scores over seeds and the run's gain over the reference, paired by seed."""
    rows = {"reference": seed_row(reference, key), "run": seed_row(run, key)}
    return {"reference_score": rows["reference"], "run_score": rows["run"], "gain": gains(rows, "run", "reference")}


def table_row(row: Dict[str, object]) -> List[str]:
    ref, run, gain = row["reference_score"], row["run_score"], row["gain"]
    cells = [
        f"{TASK_NAMES[row['task']]}, {KEY_NAMES[row['key']]}",
        str(row["label"]),
        f"{mean_text(ref)} → {mean_text(run)}",
    ]
    if "sign_flip_p" in gain:
        cells += [
            f"{gain['absolute']:+.2f} [{gain['ci95_low']:+.2f}, {gain['ci95_high']:+.2f}]",
            reduction_text(gain),
            f"{gain['sign_flip_p']:.3f}",
            str(gain["pairs"]),
        ]
    else:  # fewer than two paired seeds: no interval, no test
        cells += [f"{gain['absolute']:+.2f}", "", "", str(gain.get("pairs", 0))]
    return cells


def write_plots(training: Path, output: Path) -> List[str]:
    """The dev curves of each task's converged runs and the layer weights of the ELMo runs that exist."""
    from experiments.report.dev_curves import dev_scores, mean_curve, plot
    from experiments.report.layer_weights import chart_title, run_mixes
    from spacy_elmo.layer_mixes import mean_over_runs, plot_mixes

    written = []
    for task, key in DEV_KEY.items():
        runs = [
            training / f"{task}_{name}"
            for name in (
                "baseline_converged",
                "elmo_v2_converged",
                "glove_converged",
                "glove_elmo_v2_converged",
                "baseline_bilstm",
                "elmo_v2_bilstm",
            )
        ]
        runs = [run for run in runs if sorted(run.glob("seed*/train_log.jsonl"))]
        if runs:
            plot({run.name: mean_curve(dev_scores(run, key)) for run in runs}, key, output / f"dev_curves_{task}.png")
            written.append(f"dev_curves_{task}.png")
    found: Dict[str, List[Dict[str, object]]] = {}
    for task in DEV_KEY:
        for name in ("elmo_v2", "elmo_v2_converged"):
            if sorted((training / f"{task}_{name}").glob("seed*/model-best")):
                found.update(run_mixes(training / f"{task}_{name}"))
    if found:
        summary = mean_over_runs({label: [mix["weights"] for mix in mixes] for label, mixes in found.items()})
        plot_mixes(summary, output / "layer_weights.png", title=chart_title(summary))
        written.append("layer_weights.png")
    return written


def main(
    metrics: Path = typer.Option(Path("metrics/v2eval"), help="The runs' test scores, <run>/seedN.json"),
    training: Path = typer.Option(Path("training/v2eval"), help="The runs, <run>/seedN/"),
    output: Path = typer.Option(Path("reports/v2eval"), file_okay=False, help="Where the report is written"),
) -> None:
    rows, missing = [], []
    for comparison in COMPARISONS:
        for task, keys in KEYS.items():
            reference, run = comparison.folders(metrics, task)
            if not (any(reference.glob("seed*.json")) and any(run.glob("seed*.json"))):
                missing.append(f"{TASK_NAMES[task]}: {comparison.label} ({run.name} against {reference.name})")
                continue
            rows += [
                {
                    "task": task,
                    "key": key,
                    **comparison._asdict(),
                    "run": run.name[len(task) + 1 :],
                    **compare(reference, run, key),
                }
                for key in keys
            ]
    if not rows:
        raise typer.BadParameter(f"{metrics} holds no pair of scored runs: run experiments.studies.v2eval first")
    output.mkdir(parents=True, exist_ok=True)
    plots = write_plots(training, output)
    lines = [
        "# ELMo against the baseline, and the ablations",
        "",
        "Test scores, mean ± std over seeds; gains paired by seed (bootstrap 95% interval, exact sign-flip p); "
        "relative error reduction 100 · (err_ref − err_run) / err_ref with err = 100 − score.",
        "",
    ]
    header = [
        "task, score",
        "comparison",
        "reference → run",
        "gain [95% CI]",
        "rel. error reduction",
        "sign-flip p",
        "seeds",
    ]
    for section in dict.fromkeys(c.section for c in COMPARISONS):
        own = [table_row(row) for row in rows if row["section"] == section]
        if own:
            lines += [f"## {section}", "", md_table(header, own), ""]
    if missing:
        lines += ["## Not run yet", "", *(f"- {item}" for item in missing), ""]
    lines += [f"![{name}]({name})" for name in plots]
    with atomic_path(output / "results.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with atomic_path(output / "results.json") as tmp:
        srsly.write_json(tmp, {"comparisons": rows, "not_run": missing})
    typer.echo(f"wrote {output / 'results.md'}: {len(rows)} comparisons, {len(missing)} not run yet")


if __name__ == "__main__":
    run_main(main)
