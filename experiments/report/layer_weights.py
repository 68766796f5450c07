"""The layer weights softmax(s) and scale γ that runs' ELMo mixes learned, mean ± std over seeds.

    python -m experiments.report.layer_weights docs/results/v2eval/layer_weights_ner.png \\
        training/v2eval/ner_elmo_v2 training/v2eval/ner_elmo_v2_converged

Reads every RUN_DIR/seed*/model-best (``experiments.run.train_seeds``), finds each listener's mix
(``spacy_elmo.inspect.listener_mixes``), prints a table (layer 0 = the token representation) and
draws the means with their standard deviation as error bars. A run folder is named by its last
part; a pipeline with several mixes adds the component's name.
"""
from pathlib import Path
from typing import Dict, List

import numpy
import typer

from experiments.report.comparison import md_table
from spacy_elmo.inspect import listener_mixes, load_pipeline, mean_over_runs, plot_mixes


def run_mixes(run_dir: Path) -> Dict[str, List[Dict[str, object]]]:
    """{label: [the mix of each seed's best model]}; exits with a message if no seed has a model."""
    models = sorted(run_dir.glob("seed*/model-best"))
    if not models:
        raise typer.BadParameter(f"{run_dir} has no seed*/model-best: train it with experiments.run.train_seeds")
    found: Dict[str, List[Dict[str, object]]] = {}
    for model in models:
        mixes = {name: mix for name, mix in listener_mixes(load_pipeline(model)).items() if mix["weights"] is not None}
        for name, mix in mixes.items():
            label = run_dir.name if len(mixes) == 1 else f"{run_dir.name}: {name}"
            found.setdefault(label, []).append(mix)
    if not found:
        raise typer.BadParameter(f"no model in {run_dir} has a mix with learned layer weights "
                                 "(only spacy-elmo.ScalarMix.v1 learns them)")
    return found


def main(
    output: Path = typer.Argument(..., help="The chart (.png, .svg or .pdf)"),
    run_dirs: List[Path] = typer.Argument(..., exists=True, file_okay=False, help="Runs trained once per seed"),
) -> None:
    found: Dict[str, List[Dict[str, object]]] = {}
    for run_dir in run_dirs:
        found.update(run_mixes(run_dir))
    weights = {label: [mix["weights"] for mix in mixes] for label, mixes in found.items()}
    summary = mean_over_runs(weights)
    n_layers = max(len(entry["weights"]) for entry in summary.values())
    rows = []
    for label, entry in summary.items():
        gammas = [float(mix["gamma"]) for mix in found[label]]
        cells = [f"{m:.3f} ± {s:.3f}" for m, s in zip(entry["weights"], entry["std"])]
        rows.append([label, *cells, *([""] * (n_layers - len(cells))), f"{numpy.mean(gammas):.3f}", str(entry["runs"])])
    typer.echo(md_table(["run", *(f"layer {j}" for j in range(n_layers)), "γ (mean)", "seeds"], rows))
    output.parent.mkdir(parents=True, exist_ok=True)
    plot_mixes(summary, output, title="Learned layer weights, mean ± std over seeds")
    typer.echo(f"wrote {output}")


if __name__ == "__main__":
    typer.run(main)
