"""A saved pipeline whose elmo files are damaged, missing or edited by hand:
a coded error that names the file, never a bare traceback or a silent load."""
import json

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


def edit_cfg(path, **changes):
    cfg = json.loads((path / "elmo" / "cfg").read_text())
    cfg.update(changes)
    (path / "elmo" / "cfg").write_text(json.dumps(cfg))


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


@pytest.mark.parametrize("name", ["model", "cfg"])
def test_a_deleted_file(saved, name):
    path, _ = saved
    (path / "elmo" / name).unlink()
    with pytest.raises(ElmoError, match=rf"E507.*elmo/{name}'.*missing"):
        spacy.load(path)


def test_a_cfg_that_is_not_json(saved):
    path, _ = saved
    (path / "elmo" / "cfg").write_text('{"frozen": tru')
    with pytest.raises(ElmoError, match=r"E507.*elmo/cfg'"):
        spacy.load(path)


@pytest.mark.parametrize("changes,code,words", [
    ({"store_dtype": "int8"}, "E406", "int8"),
    ({"frozen": "yes"}, "E508", "'frozen'"),
    ({"train_cache_mb": -1}, "E508", "'train_cache_mb'"),
    ({"set_vector_hooks": 1}, "E508", "'set_vector_hooks'"),
    ({"vector_mix": "bottom"}, "E401", "'bottom'"),
    ({"vector_mix": [0.5, 0.5]}, "E401", r"\[0.5, 0.5\]"),
    ({"store_dtyp": "float16"}, "E508", "'store_dtyp'"),
])
def test_a_hand_edited_cfg(saved, changes, code, words):
    path, _ = saved
    edit_cfg(path, **changes)
    with pytest.raises(ElmoError, match=rf"{code}.*{words}.*elmo/cfg"):
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
