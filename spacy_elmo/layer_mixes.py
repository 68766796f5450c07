"""What a trained pipeline's tasks learned to mix: read each listener's
layer mix, and draw the weights.

Importing this module imports neither spaCy nor Thinc (the command line
loads it); the functions that need them import them when called.
"""

import os
from pathlib import Path
from typing import Dict, List, Optional

import numpy

from .errors import ElmoError, InputError, OutputError
from .util import atomic_path, make_parent_dir

CHART_FORMATS = ("png", "svg", "pdf")
LEGEND_WIDTH = 1.8  # inches beside each panel of `mixes_figure` for its legend
# What `listener_mixes` calls the biLM of a listener's copy after `nlp.replace_listeners`.
OWN_BILM = "own biLM"

Mixes = Dict[str, Dict[str, object]]
TOKEN_LAYER = "tokens"  # layer 0: the context-insensitive token representation


def layer_names(n_layers: int) -> List[str]:
    """What every table and chart calls a biLM's L + 1 layers: tokens, LSTM 1 … LSTM L (none for 0)."""
    return [TOKEN_LAYER, *(f"LSTM {j}" for j in range(1, n_layers))][:n_layers]


def listener_mixes(nlp) -> Mixes:
    """For every ELMo listener (or standalone biLM) in a pipeline: its mix's
    layer weights softmax(s), γ, and the biLM it mixes (whose L + 1 layers the
    weights are for).

    RETURNS: {"component", or "component#elmo" and "component#output_elmo" (by
        the model's names for its listeners; "component#k" for other ones) for
        a component with several mixes: {"weights": [...], "gamma": float,
        "upstream": the `elmo` component listened to, or "own biLM" for a copy
        after `nlp.replace_listeners`, "layer": the mix's Thinc name}}. A mix
        without softmax layer weights (not a `spacy-elmo.ScalarMix.v1`, nor
        holding one) has "weights" and "gamma" None.
    """
    from .models.listener import MIX_DOCS_NAME, MIX_REF, ElmoListenerModel
    from .models.scalar_mix import SCALAR_MIX_NAME, mix_weights

    mixes: Mixes = {}
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        upstreams = {}
        for node in model.walk():
            if isinstance(node, ElmoListenerModel):
                upstream = node.upstream_component or node.upstream_name
                upstreams[node.layers[0].id] = upstream if upstream != "*" else "elmo"
        # A listener that its model names (ElmoTok2Vec's "elmo" and "output_elmo") goes by that name.
        ref_names = {
            node.get_ref(ref).layers[0].id: ref
            for node in model.walk()
            for ref in node.ref_names
            if isinstance(node.get_ref(ref), ElmoListenerModel)
        }
        found = [node for node in model.walk() if node.name == MIX_DOCS_NAME and node.has_ref(MIX_REF)]
        for k, mix_docs in enumerate(found):
            mix = mix_docs.get_ref(MIX_REF)
            scalar = next((n for n in mix.walk() if n.name == SCALAR_MIX_NAME and n.has_param("s")), None)
            entry: Dict[str, object] = {"weights": None, "gamma": None}
            if scalar is not None:
                entry = {
                    "weights": numpy.asarray(scalar.ops.to_numpy(mix_weights(scalar)), dtype="float64").tolist(),
                    "gamma": float(scalar.ops.to_numpy(scalar.get_param("gamma"))[0]),
                }
            entry.update(upstream=upstreams.get(mix_docs.id, OWN_BILM), layer=mix.name)
            mixes[name if len(found) == 1 else f"{name}#{ref_names.get(mix_docs.id, k)}"] = entry
    return mixes


def mean_over_runs(runs: Dict[str, List[List[float]]]) -> Mixes:
    """Mixes for `plot_mixes` from several runs of each task ({task: [the
    weights of each run]}): the mean weights and the number of runs, with their
    standard deviation ("std") where there are two runs or more."""
    summary: Mixes = {}
    for name, weights in runs.items():
        if weights:
            array = numpy.asarray(weights, dtype="float64")
            summary[name] = {"weights": array.mean(axis=0).tolist(), "runs": len(weights)}
            if len(weights) > 1:
                summary[name]["std"] = array.std(axis=0).tolist()
    return summary


def by_upstream(mixes: Mixes) -> Dict[str, Mixes]:
    """The mixes grouped by the biLM they mix: {upstream: {name: mix}}."""
    groups: Dict[str, Mixes] = {}
    for name, mix in mixes.items():
        groups.setdefault(str(mix.get("upstream", "elmo")), {})[name] = mix
    return groups


def load_pipeline(path: Path):
    """spacy.load, with a coded error (E511) for a folder that holds no pipeline."""
    import spacy

    path = Path(path)
    if not (path / "config.cfg").is_file():
        raise InputError("E511", path=path, reason="it has no config.cfg")
    try:
        return spacy.load(path)
    except ElmoError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as err:  # what spaCy raises for a damaged pipeline
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError("E511", path=path, reason=reason) from err


def check_chart_path(output: Path) -> str:
    """Where the chart can go, before anything is loaded or printed: its
    format (by the suffix), or E520 (E510 for a parent that is a file)."""
    output = Path(output)
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in CHART_FORMATS:
        raise OutputError(
            "E520",
            path=output,
            reason=f"expected a file name ending in {', '.join('.' + f for f in CHART_FORMATS)}",
        )
    if output.is_dir():
        raise OutputError("E520", path=output, reason="it is a folder")
    # The nearest folder that exists: the missing ones are made only when the chart is written.
    existing = next(p for p in (output.parent, *output.parent.parents) if p.exists())
    if not existing.is_dir():
        raise OutputError("E510", path=output, reason=f"'{existing}' is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError("E520", path=output, reason=f"the folder '{existing}' is read-only")
    return fmt


def mixes_figure(mixes: Mixes, title: str = "Learned ELMo layer weights"):
    """A grouped bar chart of softmax(s) per task (the layers as `layer_names`
    calls them), one panel per biLM the tasks mix, its legend beside the panel;
    error bars where a mix has a "std" (see `mean_over_runs`). Mixes without
    weights are left out.

    Draws on its own `matplotlib.figure.Figure`: no pyplot, and matplotlib's
    backend, wherever the caller set it, is left alone.
    """
    from matplotlib.figure import Figure

    drawn = {name: mix for name, mix in mixes.items() if mix.get("weights") is not None}
    groups = by_upstream(drawn) or {"": {}}
    widths = [LEGEND_WIDTH + 1.6 + 1.3 * n_layers_of(group) for group in groups.values()]
    fig = Figure(figsize=(sum(widths), 3.2))
    axes = fig.subplots(1, len(groups), squeeze=False, gridspec_kw={"width_ratios": widths})
    for ax, (upstream, group) in zip(axes[0], groups.items()):
        _plot_group(ax, group, f"{title}: {upstream}" if len(groups) > 1 else title)
    fig.tight_layout()
    return fig


def plot_mixes(mixes: Mixes, output: Path, title: str = "Learned ELMo layer weights") -> None:
    """Write `mixes_figure` to `output` (.png, .svg or .pdf), atomically: a
    failure leaves `output` as it was (E520)."""
    output = Path(output)
    fmt = check_chart_path(output)
    fig = mixes_figure(mixes, title)
    try:
        make_parent_dir(output)
        with atomic_path(output) as tmp:
            fig.savefig(tmp, dpi=120, format=fmt)
    except OSError as err:
        raise OutputError("E520", path=output, reason=err) from err


def n_layers_of(group: Mixes) -> int:
    """The number of layers the (first) mix of a group weighs (0 without weights)."""
    weights: Optional[list] = next(iter(group.values()))["weights"] if group else None  # type: ignore[assignment]
    return len(weights) if weights else 0


def _plot_group(ax, group: Mixes, title: str) -> None:
    names = list(group)
    n_layers = n_layers_of(group)
    width = 0.8 / max(1, len(names))
    over_runs = any("std" in mix for mix in group.values())
    for i, name in enumerate(names):
        mix = group[name]
        xs = numpy.arange(n_layers) + (i - (len(names) - 1) / 2) * width
        label = name if mix.get("gamma") is None else f"{name} (γ={mix['gamma']:.2f})"
        ax.bar(xs, mix["weights"], width, yerr=mix.get("std"), capsize=4 if "std" in mix else 0, label=label)
    if n_layers:
        ax.axhline(1.0 / n_layers, color="grey", linestyle=":", linewidth=1, label="uniform")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)  # beside the bars
    ax.set_xticks(numpy.arange(n_layers))
    ax.set_xticklabels(layer_names(n_layers))
    ax.set_ylabel("softmax(s), mean ± std over runs" if over_runs else "softmax(s)")
    ax.set_title(title, fontsize=9)
