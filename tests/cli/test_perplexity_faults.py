"""`perplexity` (and `embed`) on a pretrained model: binary text, unwritable or failing outputs."""

import json
import random
import resource
import shutil
from pathlib import Path

import h5py
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.cli.perplexity import _write_report
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoError
from spacy_elmo.training import PretrainConfig, perplexity, pretrain
from spacy_elmo.training.data.reader import ReadStats, read_lines

from ..disk_helpers import read_only_folder
from ..training.conftest import tiny_settings, write_corpus


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny pretrained model whose tokens have 60 characters, not the usual 50."""
    path = tmp_path_factory.mktemp("ppl")
    settings = tiny_settings(write_corpus(path / "train.txt", 50), training={"max_steps": 2})
    settings["model"]["max_characters_per_token"] = 60
    pretrain(PretrainConfig.from_dict(settings), path / "run", progress=False)
    return path / "run" / "model"


def run_cli(*args):
    return CliRunner().invoke(app, ["perplexity", *map(str, args)])


def binary_file(path: Path) -> Path:
    """An executable-like file: NUL-laden bytes, with a few text lines among them."""
    rng = random.Random(0)
    chunks = [b"\x7fELF\x02\x01\x01\x00" + bytes(8)]
    for i in range(200):
        chunks.append(bytes(rng.randrange(256) for _ in range(100)) + b"\x00\x00")
        if i % 20 == 0:
            chunks.append(b"\nthe cat sat on the mat .\n")
    path.write_bytes(b"".join(chunks))
    return path


@pytest.mark.parametrize("which", ["generated", "ls"])
def test_a_binary_file_is_an_error_not_a_perplexity(tmp_path, model_dir, which):
    if which == "ls" and not shutil.which("ls"):
        pytest.skip("no ls executable here")
    binary = binary_file(tmp_path / "prog") if which == "generated" else Path(shutil.which("ls")).resolve()
    with pytest.raises(ElmoError, match=r"E504.*no tokens.*1 file\(s\), 1 of them binary"):
        perplexity(model_dir, binary)
    result = run_cli(model_dir, binary, "--output", tmp_path / "ppl.json")
    assert result.exit_code == 1 and "E504" in result.output
    assert not (tmp_path / "ppl.json").exists()


def test_a_binary_file_beside_text_is_skipped_whole(tmp_path, model_dir):
    text = write_corpus(tmp_path / "eval.txt", 5, seed=3)
    alone = perplexity(model_dir, text)
    both = perplexity(model_dir, [text, binary_file(tmp_path / "prog")])
    assert both.perplexity == alone.perplexity
    assert (both.read.binary_files, both.read.lines) == (1, 5)
    result = run_cli(model_dir, text, tmp_path / "prog")
    assert result.exit_code == 0 and "Skipped 1 binary files" in result.output


def test_text_with_a_few_bad_lines_is_not_binary(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"caf\xe9 latin-1\n" + b"binary \x00 data\n" + b"good line one\n" * 3)
    stats = ReadStats()
    assert list(read_lines([path], stats)) == ["good line one"] * 3
    assert (stats.binary_files, stats.skipped_lines) == (0, 2)


@pytest.mark.parametrize("how", ["chmod", "sysfs"])
def test_a_read_only_output_is_refused_before_measuring(tmp_path, model_dir, how):
    folder = read_only_folder(tmp_path, how)
    empty = tmp_path / "empty.txt"
    empty.write_text("")  # would be E504 if it were measured first
    result = run_cli(model_dir, empty, "--output", folder / "p.json")
    assert result.exit_code == 1 and "E514" in result.output and "p.json" in result.output, result.output
    assert not (folder / "p.json").exists()


def test_a_report_that_cannot_be_written_is_a_coded_error_and_keeps_the_old_file(tmp_path):
    out = tmp_path / "p.json"
    out.write_text("precious")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))  # every write fails, as on a full disk
    try:
        with pytest.raises(ElmoError, match=r"E513.*p\.json.*File too large"):
            _write_report(out, {"mean": 1.0})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert out.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_embed_reads_the_model_s_own_characters_per_token(tmp_path, model_dir):
    assert json.loads((model_dir / "options.json").read_text())["char_cnn"]["max_characters_per_token"] == 60
    text = write_corpus(tmp_path / "in.txt", 3)
    embed_file(model_dir / "options.json", model_dir / "weights.hdf5", text, tmp_path / "out.hdf5")
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        assert f["0"].shape[0] == 3
    assert perplexity(model_dir, text).perplexity.tokens > 0
