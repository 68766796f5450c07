"""Mean ± std of one score over seeds for several runs, and each run against the first, paired by seed.

    python -m experiments.report.paired ents_f metrics/v2eval/ner_baseline metrics/v2eval/ner_elmo_v2 ...

Each folder holds one ``seedN.json`` per seed (``experiments.demo.evaluate_seeds``). A run may
also be named in a record an earlier ``--json`` wrote, ``RECORD.json:RUN`` (the run's seeds as
that record keeps them: how a new run is paired with one whose models are no longer kept, once a
rerun of some of its seeds has reproduced the record's scores). Scores are
printed in percent; each later folder gets its gain over the first, the relative error
reduction, a bootstrap 95% interval of the paired mean difference and the sign-flip p (exact up
to 16 pairs, Monte Carlo with its standard error beyond: ``comparison.gains``). ``--json FILE``
also writes every row, its seeds' scores and its comparison to FILE (the record behind a README
table: metrics/ is not kept in the repository).
Every file is checked against ``experiments.records``; a bad one ends the command in one line
naming it (exit 1).
"""

from pathlib import Path
from typing import Dict, List, Optional, Union

import typer

from experiments.errors import ExperimentError, run_app
from experiments.records import read_comparison, read_seed_score, write_comparison
from experiments.report.comparison import format_p, gains, mean_std, mean_text, reduction_text


def scores(folder: Path, key: str) -> Dict[str, float]:
    """{seed name: 100 × the score} of a folder's seedN.json files (each checked: ``experiments.records``)."""
    if not folder.is_dir():
        raise ExperimentError(
            folder,
            found="a file" if folder.exists() else "nothing",
            expected="a folder of seedN.json (experiments.demo.evaluate_seeds) or "
            "RECORD.json:RUN (a record --json wrote)",
        )
    files = sorted(folder.glob("seed*.json"))
    if not files:
        raise ExperimentError(
            folder, expected="seedN.json files", found="none", fix="score the runs with experiments.demo.evaluate_seeds"
        )
    return {path.stem: read_seed_score(path, key) for path in files}


def recorded_scores(source: str, key: str) -> Dict[str, float]:
    """{seed name: score in percent} of RUN in RECORD.json, a record ``--json`` wrote for the score ``key``."""
    path, _, run = source.partition(".json:")
    path = Path(path + ".json")
    if not path.is_file():
        raise ExperimentError(
            source, expected="RECORD.json:RUN with RECORD.json a record written by --json", found=f"no file {path}"
        )
    record = read_comparison(path)
    if record.key != key:
        raise ExperimentError(
            path,
            expected=f"a record of the score '{key}'",
            found=f"a record of '{record.key}'",
            fix=f"name a record of '{key}'",
        )
    if run not in record.runs:
        raise ExperimentError(path, expected=f"the run '{run}'", found=f"only: {', '.join(record.runs)}")
    return dict(record.runs[run].by_seed)


def seed_row(source: Union[str, Path], key: str) -> Dict[str, object]:
    """Mean ± std of a run's scores over seeds, with each seed's score (what ``comparison.gains`` pairs).

    ``source`` is a folder of seedN.json files or ``RECORD.json:RUN``.
    """
    source = str(source)
    found = recorded_scores(source, key) if ".json:" in source else scores(Path(source), key)
    return {**mean_std(list(found.values())), "by_seed": found}


def main(
    key: str = typer.Argument(..., help="The score, e.g. ents_f, cats_macro_f, cats_score"),
    folders: List[str] = typer.Argument(
        ..., help="Folders of seedN.json, or RECORD.json:RUN; the first is the reference"
    ),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the rows, seeds and comparisons here"),
) -> None:
    if json_path is not None and json_path.is_dir():  # refused before any work
        raise ExperimentError(
            json_path,
            expected="a file name for the record (--json)",
            found="a folder",
            fix="name a .json file, e.g. FOLDER/record.json",
        )
    rows = {folder: seed_row(folder, key) for folder in folders}
    first = folders[0]
    for name, row in rows.items():
        line = f"{name}: {mean_text(row)} ({row['n']} seeds)"
        gain = gains(rows, name, first) if name != first else None
        if gain:
            row["against_first"] = gain
        if gain and "sign_flip_p" in gain:
            line += (
                f"; against {first}: {gain['absolute']:+.2f} [{gain['ci95_low']:+.2f}, {gain['ci95_high']:+.2f}], "
                f"relative error reduction {reduction_text(gain)}, sign-flip p "
                f"{format_p(gain)} ({gain['pairs']} pairs)"
            )
        typer.echo(line)
    if json_path is not None:
        write_comparison(json_path, {"key": key, "reference": first, "runs": rows})
        typer.echo(f"wrote {json_path}")


def cli(argv: List[str]) -> None:
    app = typer.Typer(add_completion=False)
    app.command()(main)
    app(argv)


if __name__ == "__main__":
    run_app(cli)
