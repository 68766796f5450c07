import json

import pytest
import typer
from typer.testing import CliRunner

from experiments.errors import ExperimentError
from experiments.report import paired

from .helpers import write_seed_scores as write


def row_of(**runs):
    """A report row: each run's mean and std and its scores by seed."""
    from experiments.report.comparison import mean_std

    return {name: {**mean_std(list(scores.values())), "by_seed": scores} for name, scores in runs.items()}


def invoke_paired(*arguments):
    """`report.paired`'s command line with `arguments` (str of each)."""
    app = typer.Typer()
    app.command()(paired.main)
    return CliRunner().invoke(app, [str(a) for a in arguments])


def test_each_run_against_the_first_paired_by_seed(tmp_path):
    write(tmp_path / "base", [0.40, 0.50, 0.45, 0.42])
    write(tmp_path / "elmo", [0.44, 0.53, 0.50, 0.43])
    result = invoke_paired("ents_f", str(tmp_path / "base"), str(tmp_path / "elmo"))
    assert result.exit_code == 0, result.output
    base_line, elmo_line = result.output.strip().splitlines()
    assert "44.25 ± 4.35 (4 seeds)" in base_line
    assert "47.50" in elmo_line and "+3.25" in elmo_line
    # every difference positive: of the 16 sign patterns only all-plus and all-minus are as extreme
    assert "sign-flip p 0.125 (4 pairs)" in elmo_line


def test_a_missing_score_says_which_scores_there_are(tmp_path):
    write(tmp_path / "base", [0.4, 0.5], key="cats_macro_f")
    with pytest.raises(
        ExperimentError, match="seed0.json: expected the score 'ents_f', found only the scores cats_macro_f"
    ):
        paired.scores(tmp_path / "base", "ents_f")


def test_json_keeps_each_seed_and_the_comparison(tmp_path):
    write(tmp_path / "base", [0.40, 0.50])
    write(tmp_path / "elmo", [0.44, 0.49])
    out = tmp_path / "record" / "ner.json"
    result = invoke_paired("ents_f", str(tmp_path / "base"), str(tmp_path / "elmo"), "--json", str(out))
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["key"] == "ents_f" and record["reference"] == str(tmp_path / "base")
    elmo = record["runs"][str(tmp_path / "elmo")]
    assert elmo["by_seed"] == pytest.approx({"seed0": 44.0, "seed1": 49.0})
    assert elmo["against_first"]["absolute"] == pytest.approx(1.5)
    assert "against_first" not in record["runs"][str(tmp_path / "base")]


def test_a_run_with_fewer_seeds_is_compared_over_the_seeds_both_have():
    from experiments.report.comparison import gains

    reference = {"seed0": 40.0, "seed1": 50.0, "seed2": 30.0, "seed3": 90.0}
    partial = {"seed0": 41.0, "seed1": 52.0, "seed2": 33.0}
    gain = gains(row_of(ref=reference, run=partial), "run", "ref")
    assert gain["pairs"] == 3
    assert gain["absolute"] == pytest.approx(2.0, rel=1e-9)  # (1 + 2 + 3) / 3, not 42.0 − 52.5
    assert gain["ci95_low"] <= gain["absolute"] <= gain["ci95_high"]
    assert gain["relative_error_reduction"] == pytest.approx(100 * 2 / 60, rel=1e-9)  # error 60 → 58 on those seeds


def test_against_a_perfect_reference_the_relative_error_reduction_is_undefined_not_zero(tmp_path):
    # There is no error to reduce: the report said "+0.0%" for a run 10 points worse.
    write(tmp_path / "base", [1.0, 1.0, 1.0])
    write(tmp_path / "worse", [0.9, 0.9, 0.9])
    out = tmp_path / "record.json"
    result = invoke_paired("ents_f", str(tmp_path / "base"), str(tmp_path / "worse"), "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "relative error reduction n/a" in result.output and "+0.0%" not in result.output
    gain = json.loads(out.read_text())["runs"][str(tmp_path / "worse")]["against_first"]
    assert gain["absolute"] == pytest.approx(-10.0) and gain["relative_error_reduction"] is None


def test_a_gain_says_over_how_many_paired_seeds_it_is():
    # Runs that share no seed are compared by their means: the record must say it is unpaired.
    from experiments.report.comparison import gains

    reference = {"seed0": 40.0, "seed1": 50.0}
    assert gains(row_of(ref=reference, run={"seed2": 60.0, "seed3": 70.0}), "run", "ref")["pairs"] == 0
    assert gains(row_of(ref=reference, run={"seed1": 60.0, "seed2": 70.0}), "run", "ref")["pairs"] == 1


def test_a_run_can_be_read_from_an_earlier_record(tmp_path):
    """RECORD.json:RUN pairs a new run with the seeds an earlier --json kept, as if its folder were there."""
    write(tmp_path / "base", [0.40, 0.50, 0.45])
    write(tmp_path / "elmo", [0.44, 0.49, 0.47])
    record = tmp_path / "record.json"
    result = invoke_paired("ents_f", str(tmp_path / "base"), str(tmp_path / "elmo"), "--json", str(record))
    assert result.exit_code == 0, result.output
    write(tmp_path / "new", [0.45, 0.55, 0.40])
    from_record = invoke_paired("ents_f", f"{record}:{tmp_path / 'base'}", str(tmp_path / "new"))
    from_folder = invoke_paired("ents_f", str(tmp_path / "base"), str(tmp_path / "new"))
    assert from_record.exit_code == 0, from_record.output
    # the same numbers either way: the record keeps each seed's score
    assert from_record.output.replace(f"{record}:", "") == from_folder.output
    assert "+1.67" in from_record.output.splitlines()[1]


def test_a_record_of_another_score_or_without_the_run_is_refused(tmp_path):
    record = tmp_path / "record.json"
    run = {"mean": 40.0, "std": 0.0, "n": 1, "by_seed": {"seed0": 40.0}}
    record.write_text(json.dumps({"key": "cats_macro_f", "reference": "base", "runs": {"base": run}}))
    with pytest.raises(
        ExperimentError, match="expected a record of the score 'ents_f', found a record of 'cats_macro_f'"
    ):
        paired.seed_row(f"{record}:base", "ents_f")
    with pytest.raises(ExperimentError, match="expected the run 'elmo', found only: base"):
        paired.seed_row(f"{record}:elmo", "cats_macro_f")
    with pytest.raises(ExperimentError, match="absent.json:base: expected RECORD.json:RUN .* found no file"):
        paired.seed_row(f"{tmp_path / 'absent.json'}:base", "cats_macro_f")
    # a record named without its run, or a misspelt folder, is not read as a folder without seeds
    for source in (record, tmp_path / "absent"):
        with pytest.raises(ExperimentError, match=": expected a folder of seedN.json"):
            paired.seed_row(source, "cats_macro_f")
    assert paired.seed_row(f"{record}:base", "cats_macro_f")["by_seed"] == {"seed0": 40.0}


# --------------------------------------------------------------------------
# The sign-flip test: exact up to 16 pairs, Monte Carlo with its error beyond
# --------------------------------------------------------------------------


def brute_force_p(differences):
    """The exact two-sided sign-flip p by enumerating every sign pattern one by one."""
    import itertools

    observed = abs(sum(differences)) / len(differences)
    patterns = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(
        abs(sum(s * d for s, d in zip(signs, differences))) / len(differences) >= observed - 1e-12 for signs in patterns
    )
    return extreme / len(patterns)


def test_the_exact_test_is_every_sign_pattern():
    import numpy

    from experiments.report.comparison import sign_flip_test

    rng = numpy.random.default_rng(3)
    for n in (2, 5, 9, 12):
        differences = rng.normal(0.8, 2.0, size=n)
        result = sign_flip_test(differences)
        assert result["sign_flip_method"] == "exact" and result["sign_flip_se"] == 0.0
        assert result["sign_flip_p"] == pytest.approx(brute_force_p(list(differences)), abs=1e-12)


@pytest.mark.parametrize("n", [24, 40])
def test_many_pairs_take_well_under_a_second(n):
    import time

    import numpy

    from experiments.report.comparison import EXACT_MAX_PAIRS, paired_test

    differences = numpy.random.default_rng(n).normal(0.5, 2.0, size=n)
    start = time.perf_counter()
    result = paired_test(differences)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"{n} pairs took {elapsed:.2f} s"
    assert n > EXACT_MAX_PAIRS and result["sign_flip_method"].startswith("monte carlo")
    assert 0.0 < result["sign_flip_p"] <= 1.0 and 0.0 < result["sign_flip_se"] < 0.002
    assert result["pairs"] == n


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_monte_carlo_p_matches_the_exact_p_within_its_stated_error(seed):
    import numpy

    from experiments.report.comparison import sign_flip_test

    differences = numpy.random.default_rng(seed).normal(0.6, 2.0, size=14)
    exact = sign_flip_test(differences)
    estimate = sign_flip_test(differences, exact_max_pairs=0)  # 14 pairs forced through Monte Carlo
    assert estimate["sign_flip_method"].startswith("monte carlo")
    assert estimate["sign_flip_se"] > 0
    assert abs(estimate["sign_flip_p"] - exact["sign_flip_p"]) <= 4 * estimate["sign_flip_se"]


def test_a_monte_carlo_p_is_stated_with_its_error_in_the_output_and_the_record(tmp_path):
    import numpy

    values = numpy.random.default_rng(0).uniform(0.3, 0.6, size=24)
    write(tmp_path / "base", list(values))
    write(tmp_path / "elmo", list(values + 0.01))
    out = tmp_path / "record.json"
    result = invoke_paired("ents_f", str(tmp_path / "base"), str(tmp_path / "elmo"), "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "(Monte Carlo) (24 pairs)" in result.output
    comparison = json.loads(out.read_text())["runs"][str(tmp_path / "elmo")]["against_first"]
    assert comparison["sign_flip_method"] == "monte carlo (100000 draws, seed 0)"
    assert 0 < comparison["sign_flip_se"] < 0.001
    assert comparison["sign_flip_p"] == pytest.approx(1 / 100001)  # every difference +1: no draw as extreme


# --------------------------------------------------------------------------
# Bad files end the command in one line naming them (experiments.records)
# --------------------------------------------------------------------------


def run_paired(args, capsys):
    """`python -m experiments.report.paired ARGS`: its exit status and what it wrote to stderr."""
    from experiments.errors import run_app

    with pytest.raises(SystemExit) as info:
        run_app(paired.cli, [str(arg) for arg in args])
    return info.value.code, capsys.readouterr().err


def good_runs(tmp_path):
    write(tmp_path / "base", [0.40, 0.50, 0.45])
    write(tmp_path / "elmo", [0.44, 0.49, 0.47])
    return tmp_path / "base", tmp_path / "elmo"


@pytest.mark.parametrize(
    "content, found",
    [
        (b'{"ents_f": 0.4, "ents_p"', "text that is not complete JSON"),  # cut in half
        (b"[0.4, 0.5]", "list [0.4, 0.5]"),
        (b'{"ents_f": null}', "null"),
        (b'{"ents_f": NaN}', "nan"),
        (b'{"ents_f": "0.4"}', 'str "0.4"'),
        ('{"ents_f": 0.4, "name": "caf\u00e9"}'.encode("latin-1"), "the byte b'\\xe9'"),
    ],
    ids=["cut", "list", "null", "nan", "string", "latin-1"],
)
def test_a_damaged_seed_file_is_one_line_naming_it(tmp_path, capsys, content, found):
    base, elmo = good_runs(tmp_path)
    bad = elmo / "seed1.json"
    bad.write_bytes(content)
    code, err = run_paired(["ents_f", base, elmo], capsys)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith(f"error: {bad}") and ": expected " in err
    assert found in err


@pytest.mark.parametrize(
    "record, found",
    [
        ("cut", "text that is not complete JSON"),  # a record cut in half
        (
            {"key": "ents_f", "reference": "base", "runs": {"base": {"mean": 45.0, "std": 5.0, "n": 3}}},
            "no entry runs.base.by_seed",
        ),
        (
            {
                "key": "ents_f",
                "reference": "base",
                "runs": {"base": {"mean": 45.0, "std": 5.0, "n": 3, "by_seed": [40, 50]}},
            },
            "list [40, 50] at runs.base.by_seed",
        ),
        (
            {
                "key": "ents_f",
                "reference": "base",
                "runs": {"base": {"mean": 45.0, "std": 5.0, "n": 1, "by_seed": {"seed0": None}}},
            },
            "null at runs.base.by_seed.seed0",
        ),
        ([1, 2], "list [1, 2] at the top level"),
        (
            {
                "key": "ents_f",
                "reference": "base",
                "runs": {"base": {"mean": 99.0, "std": 5.0, "n": 2, "by_seed": {"seed0": 40.0, "seed1": 50.0}}},
            },
            "mean = 99.0 do not match by_seed (2 seeds, mean 45.0)",
        ),
    ],
    ids=["cut", "no-by_seed", "by_seed-list", "null-score", "list", "mean-edited"],
)
def test_a_damaged_record_is_one_line_naming_it(tmp_path, capsys, record, found):
    base, elmo = good_runs(tmp_path)
    path = tmp_path / "record.json"
    run = {"mean": 45.0, "std": 5.0, "n": 3, "by_seed": {"seed0": 40.0, "seed1": 50.0, "seed2": 45.0}}
    text = json.dumps(record if record != "cut" else {"key": "ents_f", "reference": "base", "runs": {"base": run}})
    path.write_text(text if record != "cut" else text[: len(text) // 2])
    code, err = run_paired(["ents_f", f"{path}:base", elmo], capsys)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: expected a record written by")
    assert found in err


def test_json_onto_a_folder_is_refused_before_any_work(tmp_path, capsys):
    base, elmo = good_runs(tmp_path)
    (tmp_path / "out").mkdir()
    code, err = run_paired(["ents_f", base, elmo, "--json", tmp_path / "out"], capsys)
    assert code == 1
    assert (
        err == f"error: {tmp_path / 'out'}: expected a file name for the record (--json), found a folder; "
        "name a .json file, e.g. FOLDER/record.json\n"
    )
