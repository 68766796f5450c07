"""The workflow's record schema (``experiments.records``) and the argument checks beside it."""

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.errors import ExperimentError
from experiments.records import parse_seeds

ROOT = Path(__file__).resolve().parents[2]


def test_seeds_are_whole_numbers_each_once():
    assert parse_seeds("0 1 2") == [0, 1, 2]
    assert parse_seeds("3,4, 5") == [3, 4, 5]
    for text, found in (("a", "'a'"), ("1 -2", "'1 -2'"), ("0.5", "'0.5'"), ("", "''")):
        with pytest.raises(ExperimentError, match=f"--seeds: expected whole numbers >= 0 .*, found {found}"):
            parse_seeds(text)
    with pytest.raises(ExperimentError, match="expected each seed once"):
        parse_seeds("1 1")


def test_train_seeds_with_a_seed_that_is_not_a_number_is_one_line(tmp_path):
    """`train_seeds --seeds a` raised a bare ValueError (int('a')) after spaCy was loaded."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.demo.train_seeds",
            str(ROOT / "configs" / "ner_baseline.cfg"),
            str(tmp_path / "out"),
            "--seeds",
            "a",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert result.returncode == 1
    assert (
        result.stderr == "error: --seeds: expected whole numbers >= 0 separated by spaces, e.g. \"0 1 2\", found 'a'\n"
    )
    assert not (tmp_path / "out").exists()
