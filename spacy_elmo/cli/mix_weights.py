"""`python -m spacy_elmo mix-weights PIPELINE_DIR`: what each task learned to mix."""
from pathlib import Path
from typing import Dict, List, Optional

import numpy
import typer
from wasabi import msg

from ..errors import ElmoError, Errors
from ..util import make_parent_dir
from . import app


def listener_mixes(nlp) -> Dict[str, Dict[str, object]]:
    """For every ELMo listener (or standalone biLM) in a pipeline: softmax(s) and γ.

    RETURNS: {"component" or "component#k": {"weights": [...], "gamma": float}}.
    """
    # Imported here, not at the top: the other commands (embed, pretrain,
    # perplexity) load this module too and must not pay for Thinc and spaCy.
    from ..models.scalar_mix import SCALAR_MIX_NAME, mix_weights

    mixes: Dict[str, Dict[str, object]] = {}
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        found = [node for node in model.walk() if node.name == SCALAR_MIX_NAME and node.has_param("s")]
        for k, mix in enumerate(found):
            weights = numpy.asarray(mix.ops.to_numpy(mix_weights(mix)), dtype="float64")
            gamma = float(mix.ops.to_numpy(mix.get_param("gamma"))[0])
            mixes[name if len(found) == 1 else f"{name}#{k}"] = {"weights": weights.tolist(), "gamma": gamma}
    return mixes


def load_pipeline(path: Path):
    """spacy.load, with a coded error (E511) for a folder that holds no pipeline."""
    import spacy

    if not (path / "config.cfg").is_file():
        raise ElmoError("E511", Errors.E511.format(path=path, reason="it has no config.cfg"))
    try:
        return spacy.load(path)
    except ElmoError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as err:  # what spaCy raises for a damaged pipeline
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ElmoError("E511", Errors.E511.format(path=path, reason=reason)) from err


def plot_mixes(mixes: Dict[str, Dict[str, object]], output: Path, title: str = "Learned ELMo layer weights") -> None:
    """A grouped bar chart of softmax(s) per task (layer 0 = token representation)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(mixes)
    n_layers = len(next(iter(mixes.values()))["weights"]) if mixes else 0
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * n_layers, 3.2))
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        xs = numpy.arange(n_layers) + (i - (len(names) - 1) / 2) * width
        ax.bar(xs, mixes[name]["weights"], width, label=f"{name} (γ={mixes[name]['gamma']:.2f})")
    if n_layers:
        ax.axhline(1.0 / n_layers, color="grey", linestyle=":", linewidth=1, label="uniform")
    ax.set_xticks(numpy.arange(n_layers))
    ax.set_xticklabels(["tokens"] + [f"LSTM {j}" for j in range(1, n_layers)])
    ax.set_ylabel("softmax(s)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=120)
    plt.close(fig)


@app.command("mix-weights")
def mix_weights_cli(
    pipeline_dir: Path = typer.Argument(..., help="A trained pipeline directory", exists=True, file_okay=False),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="PNG path (default: PIPELINE_DIR/elmo_mix_weights.png)"),
) -> None:
    """Print every listener's learned layer weights softmax(s) and scale γ, and plot them."""
    try:
        nlp = load_pipeline(pipeline_dir)
        output = output or pipeline_dir / "elmo_mix_weights.png"
        make_parent_dir(output)
    except ElmoError as err:
        msg.fail("Cannot show the layer weights", str(err), exits=1)
    mixes = listener_mixes(nlp)
    if not mixes:
        msg.fail(f"No ELMo layer mix found in {pipeline_dir}: none of {nlp.pipe_names} listens to an elmo component.", exits=1)
    rows: List[list] = [
        [name, *(f"{w:.3f}" for w in mix["weights"]), f"{mix['gamma']:.3f}"] for name, mix in mixes.items()
    ]
    n_layers = len(next(iter(mixes.values()))["weights"])
    msg.table(rows, header=["component", *(f"layer {j}" for j in range(n_layers)), "gamma"], divider=True)
    plot_mixes(mixes, output)
    msg.good(f"Saved the chart to {output}")
