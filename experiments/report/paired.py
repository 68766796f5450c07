"""Mean ± std of one score over seeds for several runs, and each run against the first, paired by seed.

    python -m experiments.report.paired ents_f metrics/v2eval/ner_baseline metrics/v2eval/ner_elmo_v2 ...

Each folder holds one ``seedN.json`` per seed (``experiments.run.evaluate_seeds``). A run may
also be named in a record an earlier ``--json`` wrote, ``RECORD.json:RUN`` (the run's seeds as
that record keeps them: how a new run is paired with one whose models are no longer kept, once a
rerun of some of its seeds has reproduced the record's scores). Scores are
printed in percent; each later folder gets its gain over the first, the relative error
reduction, a bootstrap 95% interval of the paired mean difference and the exact sign-flip p
(``comparison.gains``). ``--json FILE`` also writes every row, its seeds' scores and its
comparison to FILE (the record behind a README table: metrics/ is not kept in the repository).
"""
import json
from pathlib import Path
from typing import Dict, List, Optional, Union

import srsly
import typer

from experiments.report.comparison import gains, mean_std
from spacy_elmo.util import atomic_path


def scores(folder: Path, key: str) -> Dict[str, float]:
    """{seed name: 100 × the score} of a folder's seedN.json files; exits with a message if there are none."""
    if not folder.is_dir():
        raise typer.BadParameter(f"{folder} is not a folder: expected a folder of seedN.json "
                                 "(experiments.run.evaluate_seeds) or RECORD.json:RUN (a record --json wrote)")
    files = sorted(folder.glob("seed*.json"))
    if not files:
        raise typer.BadParameter(f"{folder} holds no seedN.json: score the runs with experiments.run.evaluate_seeds")
    found = {}
    for path in files:
        metrics = json.loads(path.read_text(encoding="utf8"))
        if key not in metrics:
            raise typer.BadParameter(f"{path} has no score '{key}' (it has: {', '.join(sorted(metrics)[:12])})")
        found[path.stem] = 100.0 * float(metrics[key])
    return found


def recorded_scores(source: str, key: str) -> Dict[str, float]:
    """{seed name: score in percent} of RUN in RECORD.json, a record ``--json`` wrote for the score ``key``."""
    path, _, run = source.partition(".json:")
    path = Path(path + ".json")
    if not path.is_file():
        raise typer.BadParameter(f"{source}: expected RECORD.json:RUN with RECORD.json a record written by --json, "
                                 f"but {path} is not a file")
    record = json.loads(path.read_text(encoding="utf8"))
    if record.get("key") != key:
        raise typer.BadParameter(f"{path} records the score '{record.get('key')}', not '{key}': name a record of '{key}'")
    runs = record.get("runs", {})
    if run not in runs:
        raise typer.BadParameter(f"{path} holds no run '{run}' (it holds: {', '.join(runs)})")
    return {seed: float(score) for seed, score in runs[run]["by_seed"].items()}


def seed_row(source: Union[str, Path], key: str) -> Dict[str, object]:
    """Mean ± std of a run's scores over seeds, with each seed's score (what ``comparison.gains`` pairs).

    ``source`` is a folder of seedN.json files or ``RECORD.json:RUN``.
    """
    source = str(source)
    found = recorded_scores(source, key) if ".json:" in source else scores(Path(source), key)
    return {**mean_std(list(found.values())), "by_seed": found}


def main(
    key: str = typer.Argument(..., help="The score, e.g. ents_f, cats_macro_f, cats_score"),
    folders: List[str] = typer.Argument(..., help="Folders of seedN.json, or RECORD.json:RUN; the first is the reference"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the rows, seeds and comparisons here"),
) -> None:
    rows = {folder: seed_row(folder, key) for folder in folders}
    first = folders[0]
    for name, row in rows.items():
        line = f"{name}: {row['mean']:.2f} ± {row['std']:.2f} ({row['n']} seeds)"
        gain = gains(rows, name, first) if name != first else None
        if gain:
            row["against_first"] = gain
        if gain and "sign_flip_p" in gain:
            line += (f"; against {first}: {gain['absolute']:+.2f} [{gain['ci95_low']:+.2f}, {gain['ci95_high']:+.2f}], "
                     f"relative error reduction {gain['relative_error_reduction']:+.1f}%, sign-flip p "
                     f"{gain['sign_flip_p']:.3f} ({gain['pairs']} pairs)")
        typer.echo(line)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(json_path) as tmp:
            srsly.write_json(tmp, {"key": key, "reference": first, "runs": rows})
        typer.echo(f"wrote {json_path}")


if __name__ == "__main__":
    typer.run(main)
