"""One picture of a biLM trained in stages, each a pretrain run started from the one before.

    python -m experiments.report.stages OUTPUT.png RUN_DIR [RUN_DIR ...] [--title TEXT]

Each run's ``log.jsonl`` is read in the order given and placed after the runs before it: its
steps are offset by the last step those runs logged, and a dotted line marks where each stage
starts. The released biLM's card shows its corpus-v2 stages this way.
"""

from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import typer

from spacy_elmo.training.run.plot import plot_curves
from spacy_elmo.training.run.train_log import TrainLog


def chain(logs: Sequence[List[Dict[str, Any]]]) -> Tuple[List[Dict[str, Any]], List[int]]:
    """The records of all stages on one step axis, and the step at which each stage starts."""
    records: List[Dict[str, Any]] = []
    starts: List[int] = []
    offset = 0
    for log in logs:
        stepped = [r for r in log if r.get("kind") in ("train", "dev") and "step" in r]
        if not stepped:
            raise ValueError("a stage's log holds no training or dev record: has that run started?")
        starts.append(offset)
        records.extend({**r, "step": r["step"] + offset} for r in stepped)
        offset += max(r["step"] for r in stepped)
    return records, starts


def main(
    output: Path = typer.Argument(..., help="The PNG to write"),
    runs: List[Path] = typer.Argument(..., help="The stages' pretrain run folders, first stage first"),
    title: str = typer.Option("", "--title", help="The plot's title"),
) -> None:
    logs = []
    for run in runs:
        log = TrainLog(run / "log.jsonl")
        if not log.path.exists():
            raise typer.BadParameter(f"{run} holds no log.jsonl: give pretrain run folders, first stage first")
        logs.append(log.records())
    try:
        records, starts = chain(logs)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    output.parent.mkdir(parents=True, exist_ok=True)
    plot_curves(records, output, title=title, stage_starts=starts[1:])
    print(
        f"{output}: {len(runs)} stages, {records[-1]['step']:,} steps in all; stages start at "
        + ", ".join(f"{s:,}" for s in starts)
    )


if __name__ == "__main__":
    typer.run(main)
