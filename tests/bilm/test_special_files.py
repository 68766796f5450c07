"""Paths that are not what an ELMo file is: a named pipe, a device or a folder
in the place of options.json or weights.hdf5, an options file far too large or
nested too deep, and a folder where save_allennlp writes a file."""

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.options import MAX_OPTIONS_BYTES, BiLMOptions
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoError

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
PIPE = r"a named pipe \(FIFO\), not a regular file"


@pytest.fixture
def folder(tmp_path, fixture_paths) -> Path:
    """A folder with options.json and weights.hdf5, as save_allennlp writes them."""
    path = tmp_path / "elmo"
    path.mkdir()
    shutil.copy(fixture_paths[0], path / "options.json")
    shutil.copy(fixture_paths[1], path / "weights.hdf5")
    return path


# Opens the named pipe argv[1] for writing and closes it again, over and over:
# each open waits for a reader, and closing lets that reader go (it reads the end).
RELEASE_READERS = "import sys, time\nwhile True:\n    open(sys.argv[1], 'wb').close()\n    time.sleep(0.01)"


@contextmanager
def named_pipe(path: Path):
    """`path` made a named pipe for the block. A reader that waits on it is let
    go by a process of its own (a thread could not run while the reader holds
    the GIL, as h5py does), so that code that would wait for ever fails instead
    of hanging the tests."""
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    releaser = subprocess.Popen([sys.executable, "-c", RELEASE_READERS, str(path)])
    try:
        yield path
    finally:
        releaser.kill()
        releaser.wait()


def elmo_initialize(folder: Path) -> None:
    import spacy  # the pipeline's way in only: the biLM runs without spaCy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.get_pipe("elmo").initialize(options_file=str(folder))


def embed(folder: Path) -> None:
    text = folder.parent / "in.txt"
    text.write_text("the cat sat .\n")
    embed_file(folder, None, text, folder.parent / "out.hdf5")


@needs_fifo
@pytest.mark.parametrize(
    "load",
    [
        lambda folder: BiLM.from_allennlp(folder / "options.json", folder / "weights.hdf5"),
        lambda folder: BiLM.from_allennlp(folder),
        elmo_initialize,
        embed,
    ],
    ids=["paths", "folder", "initialize", "embed"],
)
def test_a_named_pipe_as_the_options_is_refused_not_waited_on(folder, load):
    with named_pipe(folder / "options.json"), pytest.raises(ElmoError, match=rf"E010.*options file .*{PIPE}"):
        load(folder)


@needs_fifo
def test_a_named_pipe_as_the_weights_is_refused_not_waited_on(folder):
    with named_pipe(folder / "weights.hdf5"), pytest.raises(ElmoError, match=rf"E010.*weights file .*{PIPE}"):
        BiLM.from_allennlp(folder)


@pytest.mark.skipif(not Path("/dev/zero").is_char_device(), reason="no /dev/zero here")
def test_an_options_file_that_links_to_a_device_is_refused_unread(folder):
    options = folder / "options.json"
    options.unlink()
    options.symlink_to("/dev/zero")
    with pytest.raises(ElmoError, match=r"E010.*is a character device \('/dev/zero', where the link leads\)"):
        BiLM.from_allennlp(folder)


def test_a_folder_in_the_place_of_either_file_is_refused(folder, tmp_path):
    (tmp_path / "a folder").mkdir()
    with pytest.raises(ElmoError, match=r"E010.*options file '.*a folder' is a folder, not a regular file"):
        BiLMOptions.from_file(tmp_path / "a folder")
    with pytest.raises(ElmoError, match=r"E010.*weights file '.*a folder' is a folder, not a regular file"):
        BiLM.from_allennlp(folder / "options.json", tmp_path / "a folder")


def test_an_options_file_over_the_size_limit_is_refused_unread(folder):
    options = folder / "options.json"
    text = options.read_text()
    options.write_text(text + " " * (MAX_OPTIONS_BYTES - len(text.encode())))  # valid JSON, at the limit
    assert BiLMOptions.from_file(options).lstm_dim == 64
    options.write_text(options.read_text() + " ")
    with pytest.raises(ElmoError, match=rf"E011.*holds {MAX_OPTIONS_BYTES + 1:,} bytes: expected at most"):
        BiLM.from_allennlp(folder)


def test_options_nested_too_deep_for_the_json_reader_are_a_coded_error(folder):
    (folder / "options.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ElmoError, match=r"E001.*options file .*nests arrays or objects too deeply"):
        BiLM.from_allennlp(folder)


@pytest.mark.parametrize(
    "name,kind,other", [("weights.hdf5", "weights", "options.json"), ("options.json", "options", "weights.hdf5")]
)
def test_saving_where_a_folder_has_the_name_of_a_file_is_refused_before_writing(
    fixture_paths, tmp_path, name, kind, other
):
    bilm = BiLM.from_allennlp(*fixture_paths)
    (tmp_path / name).mkdir()
    with pytest.raises(ElmoError, match=rf"E540.*'{tmp_path / name}' is a folder, where the {kind} file goes"):
        bilm.save_allennlp(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name] and (tmp_path / name).is_dir()
    assert not any((tmp_path / name).iterdir())
