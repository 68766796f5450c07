"""`embed` against bad input and faults: coded errors, and no temporaries left behind."""
import json
import signal
import subprocess
import sys
import time

import h5py
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.cli.embed import embed_file
from spacy_elmo.errors import ElmoError


def temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_byte_order_mark_is_not_part_of_the_first_token(fixture_paths, tmp_path):
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text("The cat sat .\nA dog .\n", encoding="utf8")
    marked.write_text("The cat sat .\nA dog .\n", encoding="utf-8-sig")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    embed_file(*fixture_paths, plain, tmp_path / "plain.hdf5")
    embed_file(*fixture_paths, marked, tmp_path / "marked.hdf5")
    with h5py.File(tmp_path / "plain.hdf5", "r") as a, h5py.File(tmp_path / "marked.hdf5", "r") as b:
        assert torch.equal(torch.from_numpy(a["0"][...]), torch.from_numpy(b["0"][...]))
        assert json.loads(b["sentence_to_index"][0]) == {"The cat sat .": "0", "A dog .": "1"}


@pytest.mark.parametrize("device", ["potato", "cuda:99"] + ([] if torch.cuda.is_available() else ["cuda:0"]))
def test_a_device_that_cannot_be_used(fixture_paths, tmp_path, device):
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    with pytest.raises(ElmoError, match=rf"E509.*'{device}'"):
        embed_file(*fixture_paths, text, tmp_path / "out.hdf5", device=device)
    result = CliRunner().invoke(app, ["embed", *map(str, fixture_paths), str(text), str(tmp_path / "o.hdf5"),
                                      "--device", device])
    assert result.exit_code == 1 and "E509" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_an_output_under_a_file(fixture_paths, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    with pytest.raises(ElmoError, match=r"E510.*in\.txt' is a file"):
        embed_file(*fixture_paths, text, text / "out.hdf5")


def start_embedding(fixture_paths, tmp_path):
    """An embed process over a long input, once it has started writing."""
    text = tmp_path / "long.txt"
    text.write_text("\n".join(f"sentence number {i} with some words in it ." for i in range(20000)))
    output = tmp_path / "out" / "out.hdf5"
    process = subprocess.Popen([sys.executable, "-m", "spacy_elmo", "embed", *map(str, fixture_paths), str(text),
                                str(output), "--batch-size", "8"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (output.parent.exists() and temporaries(output.parent)):
        assert process.poll() is None and time.monotonic() < deadline, "embed ended before writing"
        time.sleep(0.05)
    return process, output


def test_sigterm_leaves_no_temporary_file(fixture_paths, tmp_path):
    process, output = start_embedding(fixture_paths, tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    assert list(output.parent.iterdir()) == []


@pytest.mark.slow
def test_the_next_run_removes_what_kill_9_left(fixture_paths, tmp_path):
    process, output = start_embedding(fixture_paths, tmp_path)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    left = temporaries(output.parent)
    assert len(left) == 1 and not output.exists()
    short = tmp_path / "short.txt"
    short.write_text("a b c\n")
    embed_file(*fixture_paths, short, output)
    assert temporaries(output.parent) == [] and output.exists()
