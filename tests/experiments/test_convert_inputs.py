"""Every converter ends a wrong input with one line saying what was wrong, and exit code 1:
not UTF-8, empty, a negative --max-docs, a damaged DocBin. Nothing is written then."""

import pytest
import spacy
import typer
from spacy.tokens import DocBin
from typer.testing import CliRunner

from experiments.convert import ner, sentiment5, task_text, textcat
from experiments.errors import ExperimentError
from experiments.files import read_utf8

GOOD = {
    ner: "ok\tO\nParis\tB-geo-loc\n\t\n",
    textcat: "1,a fine film\n-1,a dull one\n",
    sentiment5: "1\t2.5\ta fine film\r\n2\t-3.0\ta dull one\r\n",
}


def run(module, *args):
    app = typer.Typer()
    app.command()(module.main)
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("module", [ner, textcat, sentiment5], ids=lambda m: m.__name__.split(".")[-1])
def test_input_that_is_not_utf8_is_one_line_naming_the_line(tmp_path, module):
    source = tmp_path / "input.txt"
    source.write_bytes(GOOD[module].encode() + "café\tO\n".encode("latin-1"))
    result = run(module, source, tmp_path / "out")
    assert result.exit_code == 1
    assert f"{source}:" in result.output and "expected UTF-8 text" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("module", [ner, textcat, sentiment5], ids=lambda m: m.__name__.split(".")[-1])
def test_empty_input_is_an_error_not_empty_splits(tmp_path, module):
    source = tmp_path / "input.txt"
    source.write_text("\n\n", encoding="utf-8")
    result = run(module, source, tmp_path / "out")
    assert result.exit_code == 1
    assert "found no" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("module", [ner, textcat, sentiment5], ids=lambda m: m.__name__.split(".")[-1])
def test_negative_max_docs_is_a_usage_error(tmp_path, module):
    source = tmp_path / "input.txt"
    source.write_text(GOOD[module], encoding="utf-8")
    result = run(module, source, tmp_path / "out", "--max-docs", "-3")
    assert result.exit_code == 2
    assert "greater than or equal to 0" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", [b"", b"plain text", None])
def test_task_text_on_a_damaged_docbin_is_one_line(tmp_path, damage):
    path = tmp_path / "train.spacy"
    good = DocBin(docs=[spacy.blank("en")("A fine film .")]).to_bytes()
    path.write_bytes(good[: len(good) // 2] if damage is None else damage)
    result = run(task_text, path, tmp_path / "train.txt")
    assert result.exit_code == 1
    assert "expected a spaCy DocBin (.spacy) file" in result.output
    assert not (tmp_path / "train.txt").exists()


def test_read_text_names_the_line_of_the_bad_byte(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"one\ntwo\nth\xffree\n")
    with pytest.raises(ExperimentError, match=r"x.txt:3: expected UTF-8 text \(lines\), found the byte b'\\xff'"):
        read_utf8(path, "lines")
