"""Per-seed score files, written from engine records, for the reports that read folders of seedN.json.

    python -m experiments.engine.views RECORDS METRICS RUN_ID [RUN_ID ...]

``experiments.report.paired`` and ``comparison`` read METRICS/<run>/seed{N}.json: spaCy's test scores
at the top level (``evaluate_seeds``' format). For an engine run named ``<run>/seed<N>`` this writes
that file from its record: the record's scores, ``evaluated`` (the digests of the model and test
split scored) and ``run``. A view is derived, never a second done-check: it is rewritten whenever
it differs from its record, and a run without a record has none.
"""

import json
import sys
from pathlib import Path
from typing import List

import typer

from experiments.engine.run import RunRecord, check_run_id, read_record, record_path
from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic


def view_path(metrics: Path, run_id: str) -> Path:
    """METRICS/<run>/seed<N>.json for the engine run ``<run>/seed<N>`` (a relative path of plain names,
    `check_run_id`: a view and the record it is read from stay inside their folders)."""
    parts = check_run_id(run_id).split("/")
    if len(parts) < 2 or not parts[-1].startswith("seed"):
        raise ExperimentError(
            run_id,
            expected="an engine run named <run>/seed<N>",
            found="another name",
            fix="name the plan's runs <run>/seed<N> to give them per-seed score files",
        )
    return Path(metrics, *parts[:-1], f"{parts[-1]}.json")


def view_of(record: RunRecord) -> str:
    return json.dumps({**record.scores, "evaluated": record.evaluated, "run": record.run}, indent=2) + "\n"


def write_views(records: Path, metrics: Path, run_ids: List[str]) -> List[Path]:
    """The score file of each run that has a record (rewritten only where it differs); returns those written."""
    paths = {run_id: view_path(metrics, run_id) for run_id in run_ids}  # every name checked first
    written = []
    for run_id, path in paths.items():
        source = record_path(records, run_id)
        if not source.exists():
            continue
        text = view_of(read_record(source))
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
            written.append(path)
    return written


def main(
    records: Path = typer.Argument(...), metrics: Path = typer.Argument(...), run_ids: List[str] = typer.Argument(...)
) -> None:
    for path in write_views(records, metrics, run_ids):
        typer.echo(f"wrote {path}")


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command()(main)
    run_app(app, sys.argv[1:])
