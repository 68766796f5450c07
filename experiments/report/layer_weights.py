"""The layer weights softmax(s) and scale γ that runs' ELMo mixes learned, mean ± std over seeds.

    python -m experiments.report.layer_weights docs/results/v2eval/layer_weights_ner.png \\
        training/v2eval/ner_elmo_v2 training/v2eval/ner_elmo_v2_converged

Reads every RUN_DIR/seed*/model-best (``experiments.demo.train_seeds``), finds each listener's mix
(``spacy_elmo.layer_mixes.listener_mixes``), prints a table whose columns are the layers as the chart
names them (``spacy_elmo.layer_mixes.layer_names``: tokens, LSTM 1, …) and draws the means, with their
standard deviation as error bars over two seeds or more. A run folder is named by its last part; a
pipeline with several mixes adds the component's name.
"""

from pathlib import Path
from typing import Dict, List

import numpy
import typer

from experiments.report.comparison import md_table, spread_text
from spacy_elmo.layer_mixes import Mixes, layer_names, listener_mixes, load_pipeline, mean_over_runs, plot_mixes

TITLE = "Learned layer weights"


def run_mixes(run_dir: Path) -> Dict[str, List[Dict[str, object]]]:
    """{label: [the mix of each seed's best model]}; exits with a message if no seed has a model."""
    models = sorted(run_dir.glob("seed*/model-best"))
    if not models:
        raise typer.BadParameter(f"{run_dir} has no seed*/model-best: train it with experiments.demo.train_seeds")
    found: Dict[str, List[Dict[str, object]]] = {}
    for model in models:
        mixes = {name: mix for name, mix in listener_mixes(load_pipeline(model)).items() if mix["weights"] is not None}
        for name, mix in mixes.items():
            label = run_dir.name if len(mixes) == 1 else f"{run_dir.name}: {name}"
            found.setdefault(label, []).append(mix)
    if not found:
        raise typer.BadParameter(
            f"no model in {run_dir} has a mix with learned layer weights (only spacy-elmo.ScalarMix.v1 learns them)"
        )
    return found


def chart_title(summary: Mixes) -> str:
    """The chart's title: what its bars are, mean ± std over seeds or one seed's weights."""
    over_seeds = any("std" in entry for entry in summary.values())
    return f"{TITLE}, mean ± std over seeds" if over_seeds else f"{TITLE}, one seed"


def weights_table(found: Dict[str, List[Dict[str, object]]], summary: Mixes) -> str:
    """Each run's mean weights (± std over two seeds or more), its mean γ and its number of seeds."""
    n_layers = max(len(entry["weights"]) for entry in summary.values())
    rows = []
    for label, entry in summary.items():
        stds = entry.get("std") or [None] * len(entry["weights"])
        cells = [spread_text(m, s, digits=3) for m, s in zip(entry["weights"], stds)]
        gammas = [float(mix["gamma"]) for mix in found[label]]
        rows.append([label, *cells, *([""] * (n_layers - len(cells))), f"{numpy.mean(gammas):.3f}", str(entry["runs"])])
    return md_table(["run", *layer_names(n_layers), "γ (mean)", "seeds"], rows)


def main(
    output: Path = typer.Argument(..., help="The chart (.png, .svg or .pdf)"),
    run_dirs: List[Path] = typer.Argument(..., exists=True, file_okay=False, help="Runs trained once per seed"),
) -> None:
    found: Dict[str, List[Dict[str, object]]] = {}
    for run_dir in run_dirs:
        found.update(run_mixes(run_dir))
    weights = {label: [mix["weights"] for mix in mixes] for label, mixes in found.items()}
    summary = mean_over_runs(weights)
    typer.echo(weights_table(found, summary))
    output.parent.mkdir(parents=True, exist_ok=True)
    plot_mixes(summary, output, title=chart_title(summary))
    typer.echo(f"wrote {output}")


if __name__ == "__main__":
    typer.run(main)
