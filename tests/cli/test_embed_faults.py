"""`embed` against bad input and faults: coded errors, and no temporaries left behind."""

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoError

from ..disk_helpers import read_only_folder


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
    result = CliRunner().invoke(
        app, ["embed", *map(str, fixture_paths), str(text), str(tmp_path / "o.hdf5"), "--device", device]
    )
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
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spacy_elmo",
            "embed",
            *map(str, fixture_paths),
            str(text),
            str(output),
            "--batch-size",
            "8",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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


def test_a_full_disk_is_a_coded_error_and_leaves_nothing(fixture_paths, tmp_path):
    """A file size limit (ulimit -f) fails the writes as a full disk does."""
    text = tmp_path / "in.txt"
    text.write_text("\n".join(f"sentence number {i} with some words in it ." for i in range(300)))
    out = tmp_path / "out"
    out.mkdir()
    limit = 32 * 1024  # the output would be about 1.2 MB

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "embed", *map(str, fixture_paths), str(text), str(out / "vectors.hdf5")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_file_size,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "E513" in result.stdout and "vectors.hdf5" in result.stdout and "File too large" in result.stdout
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("how", ["chmod", "sysfs"])
def test_a_read_only_destination_is_refused_before_the_model_is_loaded(fixture_paths, tmp_path, how):
    folder = read_only_folder(tmp_path, how)
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    # The weights do not exist: the destination is checked first.
    with pytest.raises(ElmoError, match=rf"E514.*'{folder}/x\.hdf5'.*make '{folder}' writable"):
        embed_file(fixture_paths[0], tmp_path / "missing.hdf5", text, folder / "x.hdf5")
    with pytest.raises(ElmoError, match=rf"E514.*'{folder}/sub/x\.hdf5'"):
        embed_file(fixture_paths[0], tmp_path / "missing.hdf5", text, folder / "sub" / "x.hdf5")
    result = CliRunner().invoke(app, ["embed", *map(str, fixture_paths), str(text), str(folder / "x.hdf5")])
    assert result.exit_code == 1 and "E514" in result.output
    assert not (folder / "x.hdf5").exists() and not (folder / "sub").exists()


@pytest.mark.parametrize("make", [False, True])
def test_an_output_that_names_a_folder_is_refused(fixture_paths, tmp_path, make):
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    folder = tmp_path / "OUT"
    if make:
        folder.mkdir()
    with pytest.raises(ElmoError, match=r"E515.*OUT.*one HDF5 file.*OUT/in\.hdf5"):
        embed_file(*fixture_paths, text, f"{folder}/")
    result = CliRunner().invoke(app, ["embed", *map(str, fixture_paths), str(text), f"{folder}/"])
    assert result.exit_code == 1 and "E515" in result.output
    if make:
        with pytest.raises(ElmoError, match=r"E515.*a folder of that name exists"):
            embed_file(*fixture_paths, text, folder)
        assert list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == (["OUT", "in.txt"] if make else ["in.txt"])


def test_the_library_runs_without_the_command_line(fixture_paths, tmp_path):
    # A fresh interpreter: embed_file needs neither typer nor the command line package.
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    script = (
        "import sys; from spacy_elmo.embed import embed_file; embed_file(*sys.argv[1:]); "
        "print(sorted({'typer', 'spacy_elmo.cli'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *map(str, fixture_paths), str(text), str(tmp_path / "out.hdf5")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    with h5py.File(tmp_path / "out.hdf5", "r") as fin:
        assert fin["0"].shape == (3, 2, 32)


def test_a_model_folder_embeds_as_its_two_files_do(fixture_paths, tmp_path):
    """As `initialize()` and `perplexity` take a biLM folder, so does `embed`."""
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\n\nA / b\n", encoding="utf8")
    folder = fixture_paths[0].parent
    runner = CliRunner()
    two = runner.invoke(app, ["embed", *map(str, fixture_paths), str(text), str(tmp_path / "two.hdf5")])
    one = runner.invoke(app, ["embed", str(folder), str(text), str(tmp_path / "one.hdf5"), "--layers", "all"])
    assert two.exit_code == 0 and one.exit_code == 0, (two.output, one.output)
    with h5py.File(tmp_path / "two.hdf5", "r") as a, h5py.File(tmp_path / "one.hdf5", "r") as b:
        assert sorted(a) == sorted(b) == ["0", "1", "2", "sentence_to_index"]
        for key in ("0", "1", "2"):
            numpy.testing.assert_array_equal(a[key][()], b[key][()])
    embed_file(folder, None, text, tmp_path / "library.hdf5")
    with h5py.File(tmp_path / "library.hdf5", "r") as c, h5py.File(tmp_path / "one.hdf5", "r") as b:
        numpy.testing.assert_array_equal(c["0"][()], b["0"][()])


def test_cuda_graphs_change_nothing_on_a_cpu(fixture_paths, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\n\nA / b\n", encoding="utf8")
    runner = CliRunner()
    plain = runner.invoke(app, ["embed", *map(str, fixture_paths), str(text), str(tmp_path / "plain.hdf5")])
    graphs = runner.invoke(
        app, ["embed", *map(str, fixture_paths), str(text), str(tmp_path / "graphs.hdf5"), "--cuda-graphs"]
    )
    assert plain.exit_code == 0 and graphs.exit_code == 0, (plain.output, graphs.output)
    with h5py.File(tmp_path / "plain.hdf5", "r") as a, h5py.File(tmp_path / "graphs.hdf5", "r") as b:
        for key in ("0", "1", "2"):
            numpy.testing.assert_array_equal(a[key][()], b[key][()])


@pytest.mark.parametrize(
    "arguments, hint",
    [
        (["{options}", "{text}", "{out}"], "MODEL"),  # an options.json without its weights
        (["{folder}", "{text}"], "MODEL [WEIGHTS] INPUT OUTPUT"),
        (["{folder}", "{options}", "{weights}", "{text}", "{out}"], "MODEL [WEIGHTS] INPUT OUTPUT"),
        (["{folder}", "{tmp}/missing.txt", "{out}"], "INPUT"),
        (["{options}", "{tmp}/missing.hdf5", "{text}", "{out}"], "WEIGHTS"),
    ],
)
def test_wrong_arguments_are_a_usage_error(fixture_paths, tmp_path, arguments, hint):
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    names = dict(
        options=fixture_paths[0],
        weights=fixture_paths[1],
        folder=fixture_paths[0].parent,
        text=text,
        out=tmp_path / "out.hdf5",
        tmp=tmp_path,
    )
    result = CliRunner().invoke(app, ["embed", *(a.format(**names) for a in arguments)])
    assert result.exit_code == 2 and hint in result.output, result.output
    assert not (tmp_path / "out.hdf5").exists()


def test_layers_that_overflow_are_a_coded_error_and_leave_nothing(fixture_paths, tmp_path):
    # Finite weights so large that the token encoder's projection overflows to inf: the
    # layers of every line are not finite, and none is written as if it were a vector.
    options, weights = fixture_paths
    large = tmp_path / "weights.hdf5"
    large.write_bytes(Path(weights).read_bytes())
    with h5py.File(large, "a") as f:
        f["CNN_proj/W_proj"][...] = 3e38
    text = tmp_path / "in.txt"
    text.write_text("a b\nthe cat sat .\n")
    with pytest.raises(ElmoError, match=r"E535.*line 2 of the input"):  # the longest first
        embed_file(options, large, text, tmp_path / "out.hdf5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "weights.hdf5"]
