import json
import subprocess
import sys

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, batch_to_ids, length_sorted_batches
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoError

from ..numeric import assert_close_to_scale
from .helpers import LINES


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf8")
    return path


@pytest.fixture(scope="module")
def expected_layers(fixture_paths):
    """Each line alone through the model: (n_layers + 1, n_tokens, dim)."""
    model = BiLM.from_allennlp(*fixture_paths).eval()
    with torch.inference_mode():
        return [model(batch_to_ids([line.split()])).layers[:, 0].numpy() for line in LINES]


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_every_line_matches_the_model(fixture_paths, input_file, tmp_path, expected_layers, layers):
    output = tmp_path / "out.hdf5"
    embed_file(*fixture_paths, input_file, output, layers=layers, batch_size=3)
    with h5py.File(output, "r") as f:
        assert set(f.keys()) == {str(i) for i in range(len(LINES))} | {"sentence_to_index"}
        for i, expected in enumerate(expected_layers):
            if layers == "top":
                expected = expected[-1]
            elif layers == "average":
                expected = expected.mean(axis=0)
            got = f[str(i)][...]
            assert got.dtype == numpy.float32
            assert got.shape == expected.shape
            assert_close_to_scale(got, expected)


def test_blank_line_and_slash_sentence(fixture_paths, input_file, tmp_path):
    output = tmp_path / "out.hdf5"
    embed_file(*fixture_paths, input_file, output)
    with h5py.File(output, "r") as f:
        assert f["1"].shape == (3, 0, 32)
        assert f["2"].shape == (3, 3, 32)  # "either/or and/or 1/2"
        assert f["4"].shape == (3, 2, 32)
        index = json.loads(f["sentence_to_index"][0])
    assert index["either/or and/or 1/2"] == "2"
    assert index[""] == "1"
    assert index["spaced   out"] == "4"
    assert index["The cat sat on the mat ."] == "5"  # as allennlp: the last repeat wins
    assert len(index) == len(set(line.strip() for line in LINES))


def test_batching_does_not_change_the_vectors(fixture_paths, input_file, tmp_path):
    embed_file(*fixture_paths, input_file, tmp_path / "one.hdf5", batch_size=1)
    embed_file(*fixture_paths, input_file, tmp_path / "all.hdf5", batch_size=64)
    with h5py.File(tmp_path / "one.hdf5", "r") as one, h5py.File(tmp_path / "all.hdf5", "r") as together:
        for i in range(len(LINES)):
            assert_close_to_scale(one[str(i)][...], together[str(i)][...])


def test_refuses_to_overwrite(fixture_paths, input_file, tmp_path):
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"precious")
    with pytest.raises(ElmoError, match=r"E202.*out\.hdf5"):
        embed_file(*fixture_paths, input_file, output)
    assert output.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.txt", "out.hdf5"]


def test_bad_layers_value(fixture_paths, input_file, tmp_path):
    with pytest.raises(ElmoError, match=r"E201.*'bottom'"):
        embed_file(*fixture_paths, input_file, tmp_path / "out.hdf5", layers="bottom")
    assert not (tmp_path / "out.hdf5").exists()


def test_unreadable_input_leaves_no_output(fixture_paths, tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ElmoError, match=r"E203.*latin1\.txt"):
        embed_file(*fixture_paths, bad, tmp_path / "out.hdf5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latin1.txt"]


def test_command_line(fixture_paths, input_file, tmp_path, expected_layers):
    output = tmp_path / "out.hdf5"
    command = [
        sys.executable,
        "-m",
        "spacy_elmo",
        "embed",
        *map(str, fixture_paths),
        str(input_file),
        str(output),
        "--layers",
        "top",
        "--batch-size",
        "2",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with h5py.File(output, "r") as f:
        assert_close_to_scale(f["3"][...], expected_layers[3][-1])
    again = subprocess.run(command, capture_output=True, text=True)
    assert again.returncode == 1
    assert "E202" in again.stdout + again.stderr
    command[command.index(str(output))] = str(tmp_path / "other.hdf5")
    command[command.index("top")] = "middle"
    bad = subprocess.run(command, capture_output=True, text=True)
    assert bad.returncode == 1 and "E201" in bad.stdout + bad.stderr
    assert not (tmp_path / "other.hdf5").exists()


def test_length_sorted_batches():
    # Longest first, ties in input order, every index exactly once.
    assert length_sorted_batches([1, 5, 3, 5, 0], 2) == [[1, 3], [2, 0], [4]]
    assert length_sorted_batches([], 8) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_sorted_batches([1], 0)


def test_a_model_with_its_own_max_characters_per_token(fixture_paths, input_file, tmp_path):
    options = json.loads(fixture_paths[0].read_text())
    options["char_cnn"]["max_characters_per_token"] = 60
    (tmp_path / "options.json").write_text(json.dumps(options))
    model = BiLM.from_allennlp(tmp_path / "options.json", fixture_paths[1]).eval()
    output = tmp_path / "out.hdf5"
    embed_file(tmp_path / "options.json", fixture_paths[1], input_file, output, batch_size=3)
    with h5py.File(output, "r") as f, torch.inference_mode():
        for i, line in enumerate(LINES):
            expected = model(batch_to_ids([line.split()], max_chars=60)).layers[:, 0].numpy()
            assert_close_to_scale(f[str(i)][...], expected)


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_crlf_and_cr_lines_are_the_lf_lines(fixture_paths, tmp_path, end):
    text = "The cat sat .\n\nA / slash\nlast line"
    (tmp_path / "lf.txt").write_bytes(text.encode())
    (tmp_path / "other.txt").write_bytes(("\ufeff" + text.replace("\n", end)).encode())
    embed_file(*fixture_paths, tmp_path / "lf.txt", tmp_path / "lf.hdf5", layers="top")
    embed_file(*fixture_paths, tmp_path / "other.txt", tmp_path / "other.hdf5", layers="top")
    with h5py.File(tmp_path / "lf.hdf5", "r") as lf, h5py.File(tmp_path / "other.hdf5", "r") as other:
        assert sorted(other) == sorted(lf) == ["0", "1", "2", "3", "sentence_to_index"]
        assert other["sentence_to_index"][0] == lf["sentence_to_index"][0]
        for name in ("0", "1", "2", "3"):
            numpy.testing.assert_array_equal(other[name][...], lf[name][...])
