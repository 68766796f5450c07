import json

import pytest
from typer.testing import CliRunner
import typer

from experiments.report import paired


def write(folder, values, key="ents_f"):
    folder.mkdir()
    for seed, value in enumerate(values):
        (folder / f"seed{seed}.json").write_text(json.dumps({key: value}))


def test_each_run_against_the_first_paired_by_seed(tmp_path):
    write(tmp_path / "base", [0.40, 0.50, 0.45, 0.42])
    write(tmp_path / "elmo", [0.44, 0.53, 0.50, 0.43])
    app = typer.Typer()
    app.command()(paired.main)
    result = CliRunner().invoke(app, ["ents_f", str(tmp_path / "base"), str(tmp_path / "elmo")])
    assert result.exit_code == 0, result.output
    base_line, elmo_line = result.output.strip().splitlines()
    assert "44.25 ± 4.35 (4 seeds)" in base_line
    assert "47.50" in elmo_line and "+3.25" in elmo_line
    # every difference positive: of the 16 sign patterns only all-plus and all-minus are as extreme
    assert "sign-flip p 0.125 (4 pairs)" in elmo_line


def test_a_missing_score_says_which_scores_there_are(tmp_path):
    write(tmp_path / "base", [0.4, 0.5], key="cats_macro_f")
    with pytest.raises(typer.BadParameter, match="has no score 'ents_f'.*cats_macro_f"):
        paired.scores(tmp_path / "base", "ents_f")


def test_json_keeps_each_seed_and_the_comparison(tmp_path):
    write(tmp_path / "base", [0.40, 0.50])
    write(tmp_path / "elmo", [0.44, 0.49])
    app = typer.Typer()
    app.command()(paired.main)
    out = tmp_path / "record" / "ner.json"
    result = CliRunner().invoke(app, ["ents_f", str(tmp_path / "base"), str(tmp_path / "elmo"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["key"] == "ents_f" and record["reference"] == str(tmp_path / "base")
    elmo = record["runs"][str(tmp_path / "elmo")]
    assert elmo["by_seed"] == pytest.approx({"seed0": 44.0, "seed1": 49.0})
    assert elmo["against_first"]["absolute"] == pytest.approx(1.5)
    assert "against_first" not in record["runs"][str(tmp_path / "base")]


def test_a_run_with_fewer_seeds_is_compared_over_the_seeds_both_have():
    from experiments.report.comparison import gains, mean_std

    reference = {"seed0": 40.0, "seed1": 50.0, "seed2": 30.0, "seed3": 90.0}
    partial = {"seed0": 41.0, "seed1": 52.0, "seed2": 33.0}
    rows = {name: {**mean_std(list(s.values())), "by_seed": s} for name, s in (("ref", reference), ("run", partial))}
    gain = gains(rows, "run", "ref")
    assert gain["pairs"] == 3
    assert gain["absolute"] == pytest.approx(2.0, rel=1e-9)  # (1 + 2 + 3) / 3, not 42.0 − 52.5
    assert gain["ci95_low"] <= gain["absolute"] <= gain["ci95_high"]
    assert gain["relative_error_reduction"] == pytest.approx(100 * 2 / 60, rel=1e-9)  # error 60 → 58 on those seeds


def test_a_run_can_be_read_from_an_earlier_record(tmp_path):
    """RECORD.json:RUN pairs a new run with the seeds an earlier --json kept, as if its folder were there."""
    write(tmp_path / "base", [0.40, 0.50, 0.45])
    write(tmp_path / "elmo", [0.44, 0.49, 0.47])
    app = typer.Typer()
    app.command()(paired.main)
    record = tmp_path / "record.json"
    result = CliRunner().invoke(app, ["ents_f", str(tmp_path / "base"), str(tmp_path / "elmo"), "--json", str(record)])
    assert result.exit_code == 0, result.output
    write(tmp_path / "new", [0.45, 0.55, 0.40])
    from_record = CliRunner().invoke(app, ["ents_f", f"{record}:{tmp_path / 'base'}", str(tmp_path / "new")])
    from_folder = CliRunner().invoke(app, ["ents_f", str(tmp_path / "base"), str(tmp_path / "new")])
    assert from_record.exit_code == 0, from_record.output
    # the same numbers either way: the record keeps each seed's score
    assert from_record.output.replace(f"{record}:", "") == from_folder.output
    assert "+1.67" in from_record.output.splitlines()[1]


def test_a_record_of_another_score_or_without_the_run_is_refused(tmp_path):
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"key": "cats_macro_f", "runs": {"base": {"by_seed": {"seed0": 40.0}}}}))
    with pytest.raises(typer.BadParameter, match="records the score 'cats_macro_f', not 'ents_f'"):
        paired.seed_row(f"{record}:base", "ents_f")
    with pytest.raises(typer.BadParameter, match="holds no run 'elmo' \\(it holds: base\\)"):
        paired.seed_row(f"{record}:elmo", "cats_macro_f")
    with pytest.raises(typer.BadParameter, match="is not a file"):
        paired.seed_row(f"{tmp_path / 'absent.json'}:base", "cats_macro_f")
    # a record named without its run, or a misspelt folder, is not read as a folder without seeds
    for source in (record, tmp_path / "absent"):
        with pytest.raises(typer.BadParameter, match="is not a folder: expected a folder of seedN.json"):
            paired.seed_row(source, "cats_macro_f")
    assert paired.seed_row(f"{record}:base", "cats_macro_f")["by_seed"] == {"seed0": 40.0}
