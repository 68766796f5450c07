"""A saved pipeline whose elmo files are damaged or missing: a coded error
that names the file, never a bare traceback or a silent load. (Settings out
of range in its config: tests/pipeline/test_component_settings.py.)"""
import pytest
import spacy
import torch

from spacy_elmo.errors import ElmoError
from spacy_elmo.models.bilm import get_bilm

from ..numeric import assert_close_to_scale
from .test_elmo_component import elmo_pipeline


@pytest.fixture
def saved(tmp_path, bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    nlp.to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline", nlp


def test_an_intact_pipeline_loads_and_predicts_the_same(saved):
    path, nlp = saved
    loaded = spacy.load(path)
    assert_close_to_scale(loaded("The cat sat .")._.elmo.layers, nlp("The cat sat .")._.elmo.layers)


@pytest.mark.parametrize("cut", [0, 100, 0.5, -10])
def test_a_truncated_model_file(saved, cut):
    path, _ = saved
    data = (path / "elmo" / "model").read_bytes()
    (path / "elmo" / "model").write_bytes(data[: int(len(data) * cut) if isinstance(cut, float) else cut])
    with pytest.raises(ElmoError, match=r"E507.*elmo/model'"):
        spacy.load(path)


def test_a_deleted_model_file(saved):
    path, _ = saved
    (path / "elmo" / "model").unlink()
    with pytest.raises(ElmoError, match=r"E507.*elmo/model'.*missing"):
        spacy.load(path)


def test_weights_that_are_not_finite_in_a_saved_pipeline(tmp_path, saved):
    path, nlp = saved
    with torch.no_grad():
        get_bilm(nlp.get_pipe("elmo").model).lstm.W_proj[0][1][2, 3] = float("inf")
    nlp.to_disk(tmp_path / "bad")
    with pytest.raises(ElmoError, match=r"E507.*bad/elmo/model'.*E502.*W_P_0"):
        spacy.load(tmp_path / "bad")
    with pytest.raises(ElmoError, match=r"E507.*bytes.*'model'.*E502"):
        spacy.load(path).get_pipe("elmo").from_bytes(nlp.get_pipe("elmo").to_bytes())


def test_damaged_bytes(saved):
    path, nlp = saved
    data = nlp.get_pipe("elmo").to_bytes()
    fresh = spacy.load(path).get_pipe("elmo")
    with pytest.raises(ElmoError, match=r"E507.*bytes of the 'elmo' component"):
        fresh.from_bytes(data[: len(data) // 2])
    fresh.from_bytes(data)  # the whole bytes still load
