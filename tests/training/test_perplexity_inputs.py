"""Perplexity over nothing, or into a file that exists: coded errors, never NaN or a lost file."""
import json

import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.errors import ElmoError
from spacy_elmo.training import PretrainConfig, perplexity, pretrain

from .conftest import tiny_settings, write_corpus


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("ppl")
    config = PretrainConfig.from_dict(tiny_settings(write_corpus(path / "train.txt", 50), training={"max_steps": 2}))
    pretrain(config, path / "run", progress=False)
    return path / "run" / "model"


def run_cli(*args):
    return CliRunner().invoke(app, ["perplexity", *map(str, args)])


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n", b"\x00\x01\x02binary\n\xff\xfe\xfd\n"])
def test_a_text_without_tokens_is_an_error_not_nan(tmp_path, model_dir, content):
    text = tmp_path / "text.txt"
    text.write_bytes(content)
    with pytest.raises(ElmoError, match=r"E504.*text\.txt.*no tokens"):
        perplexity(model_dir, text)
    result = run_cli(model_dir, text, "--output", tmp_path / "ppl.json")
    assert result.exit_code == 1 and "E504" in result.output
    assert not (tmp_path / "ppl.json").exists()


def test_an_existing_output_is_refused_unless_overwrite(tmp_path, model_dir):
    text = write_corpus(tmp_path / "eval.txt", 5, seed=3)
    out = tmp_path / "ppl.json"
    out.write_text("precious")
    result = run_cli(model_dir, text, "--output", out)
    assert result.exit_code == 1 and "E202" in result.output
    assert out.read_text() == "precious"
    result = run_cli(model_dir, text, "--output", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["tokens"] > 0


def test_a_bad_device_or_output_path_is_a_coded_error(tmp_path, model_dir):
    text = write_corpus(tmp_path / "eval.txt", 5, seed=3)
    for device in ("potato", "cuda:99"):
        result = run_cli(model_dir, text, "--device", device)
        assert result.exit_code == 1 and "E509" in result.output, result.output
    (tmp_path / "file").write_text("x")
    result = run_cli(model_dir, text, "--output", tmp_path / "file" / "ppl.json")
    assert result.exit_code == 1 and "E510" in result.output, result.output


def test_crlf_and_cr_line_ends_score_as_lf(tmp_path, model_dir):
    text = write_corpus(tmp_path / "lf.txt", 30, seed=3).read_text(encoding="utf8")
    reports = {}
    for name, end in (("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")):
        path = tmp_path / f"{name}.crlf.txt"
        path.write_bytes(text.replace("\n", end).encode("utf8"))
        reports[name] = perplexity(model_dir, path).perplexity
    assert reports["crlf"] == reports["lf"] and reports["cr"] == reports["lf"]


def test_a_fifo_is_named_as_one_not_as_missing(tmp_path, model_dir):
    import os

    fifo = tmp_path / "text.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ElmoError, match=r"E321.*text\.fifo' is a named pipe"):
        perplexity(model_dir, fifo)
    result = run_cli(model_dir, fifo)
    assert result.exit_code == 1 and "E321" in result.output and "does not exist" not in result.output
