"""`embed` as a command: INPUT from a pipe, --overwrite, the output's layout,
and help that reads cleanly."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy
import pytest
import torch
from typer.testing import CliRunner, Result

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.cli import app
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoError

from ..numeric import assert_close_to_scale

TEXT = "The cat sat .\n\nA / b\n"
SENTENCE_TO_INDEX = {"The cat sat .": "0", "": "1", "A / b": "2"}


def embed(*arguments) -> Result:
    return CliRunner().invoke(app, ["embed", *map(str, arguments)])


def datasets(path: Path) -> dict:
    """Every dataset of an embed output, as arrays; sentence_to_index as its JSON."""
    with h5py.File(path, "r") as f:
        found = {name: f[name][()] for name in f if name != "sentence_to_index"}
        found["sentence_to_index"] = json.loads(f["sentence_to_index"][0])
    return found


def assert_same_output(a: Path, b: Path) -> None:
    got, want = datasets(a), datasets(b)
    assert sorted(got) == sorted(want)
    for name in want:
        if name == "sentence_to_index":
            assert got[name] == want[name]
        else:
            numpy.testing.assert_array_equal(got[name], want[name])


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text(TEXT, encoding="utf8")
    return path


@pytest.fixture
def reference(fixture_paths, text_file, tmp_path) -> Path:
    """The output of `text_file`, embedded from a regular file."""
    path = tmp_path / "reference.hdf5"
    embed_file(*fixture_paths, text_file, path)
    return path


# INPUT that is not a regular file.


def test_a_fifo_is_read_as_input(fixture_paths, tmp_path, reference):
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)

    def write_lines():
        with open(fifo, "w", encoding="utf8") as fout:  # waits for embed to open it
            fout.write(TEXT)

    writer = threading.Thread(target=write_lines, daemon=True)
    writer.start()
    result = embed(*fixture_paths, fifo, tmp_path / "out.hdf5")
    if writer.is_alive():  # embed never opened the FIFO: release the writer
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(timeout=10)
    assert result.exit_code == 0, result.output
    assert_same_output(tmp_path / "out.hdf5", reference)


def test_dev_stdin_reads_a_pipe(fixture_paths, tmp_path, reference):
    output = tmp_path / "out.hdf5"
    result = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "embed", *map(str, fixture_paths), "/dev/stdin", str(output)],
        input=TEXT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert_same_output(output, reference)


def test_a_folder_or_a_missing_input_is_still_refused(fixture_paths, tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    for path, why in ((folder, "is a folder"), (tmp_path / "missing.txt", "does not exist")):
        result = embed(*fixture_paths, path, tmp_path / "out.hdf5")
        assert result.exit_code == 2 and "INPUT" in result.output and why in result.output, result.output
        with pytest.raises(ElmoError, match=rf"E203.*{path.name}"):
            embed_file(*fixture_paths, path, tmp_path / "out.hdf5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts"]


# --overwrite.


def test_an_existing_output_is_refused_without_overwrite(fixture_paths, text_file, tmp_path):
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"precious")
    result = embed(*fixture_paths, text_file, output)
    assert result.exit_code == 1 and "E202" in result.output and "--overwrite" in result.output, result.output
    assert output.read_bytes() == b"precious"


def test_overwrite_replaces_an_existing_output(fixture_paths, text_file, tmp_path, reference):
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"old")
    result = embed(*fixture_paths, text_file, output, "--overwrite")
    assert result.exit_code == 0, result.output
    assert_same_output(output, reference)
    embed_file(*fixture_paths, text_file, output, layers="top", overwrite=True)
    assert datasets(output)["0"].shape == (4, 32)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.hdf5", "reference.hdf5"]


def test_a_failed_run_with_overwrite_leaves_the_old_output_whole(fixture_paths, text_file, tmp_path):
    options, weights = fixture_paths
    large = tmp_path / "weights.hdf5"
    large.write_bytes(Path(weights).read_bytes())
    with h5py.File(large, "a") as f:
        f["CNN_proj/W_proj"][...] = 3e38  # every layer overflows: E535 after the output was started
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"old")
    result = embed(options, large, text_file, output, "--overwrite")
    assert result.exit_code == 1 and "E535" in result.output, result.output
    assert output.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.hdf5", "weights.hdf5"]


def test_overwrite_never_replaces_a_folder(fixture_paths, text_file, tmp_path):
    folder = tmp_path / "out.hdf5"
    folder.mkdir()
    result = embed(*fixture_paths, text_file, folder, "--overwrite")
    assert result.exit_code == 1 and "E515" in result.output, result.output
    assert folder.is_dir() and list(folder.iterdir()) == []


# The layout readers rely on (AllenNLP's `embed_file`).


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_the_output_layout(fixture_paths, tmp_path, layers):
    """One float32 dataset per line named by its index, short lines and a
    long one (stored compact and contiguous), a blank line with 0 tokens, and
    `sentence_to_index`: one variable-length string holding a JSON object."""
    lines = ["word", "", "two words", " ".join(f"w{i}" for i in range(150))]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf8")
    output = tmp_path / "out.hdf5"
    embed_file(*fixture_paths, text, output, layers=layers, batch_size=3)
    model = BiLM.from_allennlp(*fixture_paths).eval()
    with h5py.File(output, "r") as f, torch.inference_mode():
        assert sorted(f) == sorted([str(i) for i in range(len(lines))] + ["sentence_to_index"])
        for i, line in enumerate(lines):
            expected = model(batch_to_ids([line.split()])).layers[:, 0].numpy()  # (3, n_tokens, 32)
            expected = {"all": expected, "top": expected[-1], "average": expected.mean(axis=0)}[layers]
            dataset = f[str(i)]
            assert isinstance(dataset, h5py.Dataset) and dataset.dtype == numpy.float32
            assert dataset.shape == expected.shape and dataset.chunks is None and dataset.compression is None
            assert_close_to_scale(dataset[()], expected)
        index = f["sentence_to_index"]
        assert index.shape == (1,) and h5py.check_string_dtype(index.dtype).length is None
        assert json.loads(index[0]) == {line: str(i) for i, line in enumerate(lines)}


# Help.


def test_without_a_command_the_help_is_shown_and_the_exit_status_is_0():
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ") and "Commands:" in result.output and "embed" in result.output


def test_python_m_spacy_elmo_without_a_command_shows_help():
    from spacy.cli._util import app as spacy_app

    import spacy_elmo.cli.on_spacy  # noqa: F401  (what spaCy's entry point imports)

    result = CliRunner().invoke(spacy_app, ["elmo"])
    assert result.exit_code == 0, result.output
    assert "Commands:" in result.output and "embed" in result.output


def test_embed_help_reads_cleanly():
    result = CliRunner().invoke(app, ["embed", "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    usage = " ".join(result.output.split())
    assert "embed [OPTIONS] MODEL [WEIGHTS] INPUT OUTPUT " in usage, usage
    for noise in ("<", "{", "[WEIGHTS] INPUT OUTPUT..."):
        assert noise not in result.output, result.output
    for flag in ("--overwrite", "--cuda-graphs", "--help"):
        assert f"  {flag}  " in result.output, result.output  # a flag shows no value
    for name in ("MODEL", "WEIGHTS", "INPUT", "OUTPUT"):
        assert f"\n  {name} " in result.output, result.output  # each argument explained on its own line
