"""`python -m spacy_elmo mix-weights PIPELINE_DIR`: what each task learned to mix."""
import os
from pathlib import Path
from typing import Dict, List, Optional

import numpy
import typer
from wasabi import msg

from ..errors import ElmoError, Errors
from ..util import atomic_path, make_parent_dir
from . import app

CHART_FORMATS = ("png", "svg", "pdf")


def listener_mixes(nlp) -> Dict[str, Dict[str, object]]:
    """For every ELMo listener (or standalone biLM) in a pipeline: softmax(s),
    γ, and the biLM it mixes (whose L + 1 layers the weights are for).

    RETURNS: {"component" or "component#k": {"weights": [...], "gamma": float,
        "upstream": the `elmo` component listened to, or "own biLM" for a copy
        after `nlp.replace_listeners`}}.
    """
    # Imported here, not at the top: the other commands (embed, pretrain,
    # perplexity) load this module too and must not pay for Thinc and spaCy.
    from ..models.listener import ElmoListenerModel
    from ..models.scalar_mix import SCALAR_MIX_NAME, mix_weights

    mixes: Dict[str, Dict[str, object]] = {}
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        upstreams = {}
        for node in model.walk():
            if isinstance(node, ElmoListenerModel):
                upstream = node.upstream_component or node.upstream_name
                upstreams[node.mix.id] = upstream if upstream != "*" else "elmo"
        found = [node for node in model.walk() if node.name == SCALAR_MIX_NAME and node.has_param("s")]
        for k, mix in enumerate(found):
            weights = numpy.asarray(mix.ops.to_numpy(mix_weights(mix)), dtype="float64")
            gamma = float(mix.ops.to_numpy(mix.get_param("gamma"))[0])
            mixes[name if len(found) == 1 else f"{name}#{k}"] = {
                "weights": weights.tolist(), "gamma": gamma, "upstream": upstreams.get(mix.id, "own biLM"),
            }
    return mixes


def by_upstream(mixes: Dict[str, Dict[str, object]]) -> Dict[str, Dict[str, Dict[str, object]]]:
    """The mixes grouped by the biLM they mix: {upstream: {name: mix}}."""
    groups: Dict[str, Dict[str, Dict[str, object]]] = {}
    for name, mix in mixes.items():
        groups.setdefault(str(mix.get("upstream", "elmo")), {})[name] = mix
    return groups


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


def check_chart_path(output: Path) -> str:
    """Where the chart can go, before anything is loaded or printed: its
    format (by the suffix), or E520 (E510 for a parent that is a file)."""
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in CHART_FORMATS:
        raise ElmoError("E520", Errors.E520.format(
            path=output, reason=f"expected a file name ending in {', '.join('.' + f for f in CHART_FORMATS)}",
        ))
    if output.is_dir():
        raise ElmoError("E520", Errors.E520.format(path=output, reason="it is a folder"))
    # The nearest folder that exists: the missing ones are made only when the chart is written.
    existing = next(p for p in (output.parent, *output.parent.parents) if p.exists())
    if not existing.is_dir():
        raise ElmoError("E510", Errors.E510.format(path=output, reason=f"'{existing}' is a file, not a folder"))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ElmoError("E520", Errors.E520.format(path=output, reason=f"the folder '{existing}' is read-only"))
    return fmt


def plot_mixes(mixes: Dict[str, Dict[str, object]], output: Path, title: str = "Learned ELMo layer weights") -> None:
    """A grouped bar chart of softmax(s) per task (layer 0 = token
    representation), one panel per biLM the tasks mix. Written atomically:
    a failure leaves `output` as it was (E520)."""
    fmt = check_chart_path(Path(output))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = by_upstream(mixes) or {"": {}}
    widths = [1.6 + 1.3 * _n_layers(group) for group in groups.values()]
    fig, axes = plt.subplots(1, len(groups), figsize=(sum(widths), 3.2), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, (upstream, group) in zip(axes[0], groups.items()):
        _plot_group(ax, group, f"{title}: {upstream}" if len(groups) > 1 else title)
    fig.tight_layout()
    try:
        make_parent_dir(output)
        with atomic_path(output) as tmp:
            fig.savefig(tmp, dpi=120, format=fmt)
    except OSError as err:
        raise ElmoError("E520", Errors.E520.format(path=output, reason=err)) from err
    finally:
        plt.close(fig)


def _n_layers(group: Dict[str, Dict[str, object]]) -> int:
    return len(next(iter(group.values()))["weights"]) if group else 0


def _plot_group(ax, group: Dict[str, Dict[str, object]], title: str) -> None:
    names = list(group)
    n_layers = _n_layers(group)
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        xs = numpy.arange(n_layers) + (i - (len(names) - 1) / 2) * width
        ax.bar(xs, group[name]["weights"], width, label=f"{name} (γ={group[name]['gamma']:.2f})")
    if n_layers:
        ax.axhline(1.0 / n_layers, color="grey", linestyle=":", linewidth=1, label="uniform")
    ax.set_xticks(numpy.arange(n_layers))
    ax.set_xticklabels(["tokens"] + [f"LSTM {j}" for j in range(1, n_layers)])
    ax.set_ylabel("softmax(s)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)


@app.command("mix-weights")
def mix_weights_cli(
    pipeline_dir: Path = typer.Argument(..., help="A trained pipeline directory", exists=True, file_okay=False),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Also draw the weights into this chart (.png, .svg or .pdf); none without it",
    ),
) -> None:
    """Print every listener's learned layer weights softmax(s) and scale γ, one
    table per biLM they mix; with --output, also plot them."""
    try:
        if output is not None:
            check_chart_path(output)
        nlp = load_pipeline(pipeline_dir)
    except ElmoError as err:
        msg.fail("Cannot show the layer weights", str(err), exits=1)
    mixes = listener_mixes(nlp)
    if not mixes:
        msg.fail(f"No ELMo layer mix found in {pipeline_dir}: none of {nlp.pipe_names} listens to an elmo component.", exits=1)
    for upstream, group in by_upstream(mixes).items():
        n_layers = _n_layers(group)
        what = f"'{upstream}'" if upstream != "own biLM" else "their own biLM"
        msg.divider(f"Mixing {what} ({n_layers} layers)")
        rows: List[list] = [
            [name, *(f"{w:.3f}" for w in mix["weights"]), f"{mix['gamma']:.3f}"] for name, mix in group.items()
        ]
        msg.table(rows, header=["component", *(f"layer {j}" for j in range(n_layers)), "gamma"], divider=True)
    if output is not None:
        try:
            plot_mixes(mixes, output)
        except ElmoError as err:
            msg.fail("Cannot save the chart", str(err), exits=1)
        msg.good(f"Saved the chart to {output}")
