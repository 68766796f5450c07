"""`embed` under torchrun: two processes on the CPU (gloo) write the file one process writes."""

import json
import os
import subprocess
import sys

import h5py
import numpy
import pytest

from .helpers import LINES as SINGLE_PROCESS_LINES

LINES = [
    *SINGLE_PROCESS_LINES,
    "one",
    "two words",
    "a b c d e f g h",
    "http://example.com/a/b is a URL",
    "The end .",
]


def embed(*args, processes, cwd):
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)] if processes else []
    command = [sys.executable, *launcher, "-m", "spacy_elmo", "embed", *map(str, args)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # the same threads: the same sums, bit for bit
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def read(path):
    with h5py.File(path, "r") as f:
        index = json.loads(f["sentence_to_index"][0])
        return {name: f[name][...] for name in f if name != "sentence_to_index"}, index


@pytest.mark.slow
def test_two_processes_write_the_single_process_file(fixture_paths, tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(LINES) + "\n", encoding="utf8")
    options = [*fixture_paths, "in.txt"]
    single = embed(*options, "single.hdf5", "--batch-size", "3", processes=0, cwd=tmp_path)
    assert single.returncode == 0, single.stdout + single.stderr
    done = embed(*options, "out.hdf5", "--batch-size", "3", processes=2, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("Saved to") == 1  # one writer

    expected, expected_index = read(tmp_path / "single.hdf5")
    got, index = read(tmp_path / "out.hdf5")
    assert sorted(got) == sorted(expected) == sorted(str(i) for i in range(len(LINES)))
    for name, array in expected.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape, name
        assert numpy.array_equal(got[name], array), name
    assert index == expected_index
    assert got["1"].shape == (3, 0, 32) and index["either/or and/or 1/2"] == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.hdf5", "single.hdf5"]

    # An existing output is refused by every process before any work, and kept.
    again = embed(*options, "out.hdf5", processes=2, cwd=tmp_path)
    assert again.returncode != 0 and "E202" in again.stdout + again.stderr
    assert read(tmp_path / "out.hdf5")[1] == index
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.hdf5", "single.hdf5"]
