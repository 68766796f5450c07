"""The picture of a run: training and dev perplexity against steps."""
from pathlib import Path
from typing import Any, Dict, List, Sequence, Union

from ...util import atomic_path


def plot_curves(records: List[Dict[str, Any]], path: Union[str, Path], title: str = "",
                stage_starts: Sequence[int] = ()) -> None:
    """`stage_starts`: steps where a new training stage begins, each marked by a dotted line."""
    from matplotlib.figure import Figure  # no pyplot: no global backend state

    train = [r for r in records if r.get("kind") == "train"]
    dev = [r for r in records if r.get("kind") == "dev"]
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    if train:
        ax.plot([r["step"] for r in train], [r["ppl"] for r in train], label="train (mean of both LMs)", lw=1)
    for key, label, style in (("ppl", "dev (mean)", "o-"), ("ppl_forward", "dev forward", "--"),
                              ("ppl_backward", "dev backward", ":")):
        if dev:
            ax.plot([r["step"] for r in dev], [r[key] for r in dev], style, label=label, lw=1.2, ms=3)
    for i, start in enumerate(stage_starts):
        ax.axvline(start, color="grey", ls=":", lw=1, label="new stage" if i == 0 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("perplexity")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
