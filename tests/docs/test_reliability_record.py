"""The reliability record names the test behind each row: every `tests/…py::name` it
cites must be a test that exists, so a renamed or deleted test cannot leave a row
pointing at nothing."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "docs" / "reliability.md"
_CITED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def cited_tests():
    return sorted(set(_CITED.findall(RECORD.read_text(encoding="utf8"))))


def test_the_record_cites_tests():
    assert len(cited_tests()) >= 10


@pytest.mark.parametrize("path,name", cited_tests())
def test_a_cited_test_exists(path, name):
    source = ROOT / path
    assert source.is_file(), f"docs/reliability.md cites {path}, which does not exist"
    assert re.search(rf"^\s*def {name}\(", source.read_text(encoding="utf8"), re.M), (
        f"docs/reliability.md cites {path}::{name}, which {path} does not define"
    )
