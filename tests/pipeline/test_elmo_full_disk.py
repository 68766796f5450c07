"""`nlp.to_disk` on a disk that fills up while the `elmo` component writes its
model: a coded error, and the model file saved before is left whole."""

import errno
import os
from pathlib import Path

import numpy
import pytest
import spacy

from spacy_elmo.errors import OutputError

from .pipelines import tiny_pipeline


def test_a_full_disk_while_saving_the_model_is_a_coded_error_and_keeps_the_old_file(tmp_path, monkeypatch):
    nlp = tiny_pipeline(token_cache_size=64)
    nlp.to_disk(tmp_path / "pipeline")
    model_file = tmp_path / "pipeline" / "elmo" / "model"
    saved = model_file.read_bytes()
    write_bytes = Path.write_bytes

    def half_then_no_room(path: Path, data: bytes) -> int:
        """The model's temporary file gets half its bytes, then the disk is full."""
        if not path.name.startswith(".model."):
            return write_bytes(path, data)
        write_bytes(path, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(Path, "write_bytes", half_then_no_room)
    with pytest.raises(OutputError, match=rf"E513.*'{model_file}'.*No space left on device"):
        nlp.to_disk(tmp_path / "pipeline")
    monkeypatch.undo()
    assert model_file.read_bytes() == saved
    assert sorted(p.name for p in model_file.parent.iterdir()) == ["model"]  # no temporary file left
    reloaded = spacy.load(tmp_path / "pipeline")
    text = "the old model loads"
    assert numpy.array_equal(reloaded(text)._.elmo.layers, nlp(text)._.elmo.layers)
