"""A saved pipeline whose elmo files are damaged or missing: a coded error
that names the file, never a bare traceback or a silent load. (Settings out
of range in its config: tests/pipeline/test_component_settings.py.)"""

import io
import re

import h5py
import pytest
import spacy
import srsly
import torch

from spacy_elmo.errors import DivergedRunError, ElmoError
from spacy_elmo.models.bilm import get_bilm

from ..numeric import assert_close_to_scale
from .pipelines import elmo_pipeline


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


def with_weight_not_finite(model_bytes: bytes, dataset: str) -> bytes:
    """A saved elmo model (Thinc's bytes around the biLM's HDF5 weights) with one
    weight made infinite, as no spacy-elmo writer would save it (E536)."""
    msg = srsly.msgpack_loads(model_bytes)
    shims = msg["shims"][1]  # the nodes' shims: the model's own (none), the wrapper's (the biLM)
    shim = srsly.msgpack_loads(shims[0])
    bilm = srsly.msgpack_loads(shim["state"])  # bilm_to_bytes: the options and the HDF5 weights
    weights = io.BytesIO(bilm["weights"])
    with h5py.File(weights, "a") as f:
        f[dataset][(0,) * f[dataset].ndim] = float("inf")
    shim["state"] = srsly.msgpack_dumps({**bilm, "weights": weights.getvalue()})
    shims[0] = srsly.msgpack_dumps(shim)
    return srsly.msgpack_dumps(msg)


def test_weights_that_are_not_finite_in_a_saved_pipeline(saved):
    path, _ = saved
    model = path / "elmo" / "model"
    good = model.read_bytes()
    model.write_bytes(with_weight_not_finite(good, "RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0"))
    with pytest.raises(ElmoError, match=r"E507.*elmo/model'.*E502.*W_P_0"):
        spacy.load(path)
    model.write_bytes(good)
    component = spacy.load(path).get_pipe("elmo")
    data = srsly.msgpack_loads(component.to_bytes())
    data["model"] = with_weight_not_finite(data["model"], "CNN_proj/W_proj")
    with pytest.raises(ElmoError, match=r"E507.*bytes.*'model'.*E502.*CNN_proj"):
        component.from_bytes(srsly.msgpack_dumps(data))


def test_a_diverged_bilm_is_not_saved_over_a_good_pipeline(saved):
    # Fine-tuning that diverged leaves NaN weights, which no load would take (E502): saving
    # them over a good pipeline would lose it.
    path, nlp = saved
    before = (path / "elmo" / "model").read_bytes()
    with torch.no_grad():
        get_bilm(nlp.get_pipe("elmo").model).lstm.W_proj[0][1][2, 3] = float("nan")
    with pytest.raises(DivergedRunError, match=r"E536.*'RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0' holds 1 NaN"):
        nlp.to_disk(path)
    assert (path / "elmo" / "model").read_bytes() == before
    assert [p.name for p in (path / "elmo").iterdir() if p.name.endswith(".tmp")] == []
    with pytest.raises(DivergedRunError, match="E536"):
        nlp.get_pipe("elmo").to_bytes()
    spacy.load(path)("The cat sat .")


def test_damaged_bytes(saved):
    path, nlp = saved
    data = nlp.get_pipe("elmo").to_bytes()
    fresh = spacy.load(path).get_pipe("elmo")
    with pytest.raises(ElmoError, match=r"E507.*bytes of the 'elmo' component"):
        fresh.from_bytes(data[: len(data) // 2])
    fresh.from_bytes(data)  # the whole bytes still load


@pytest.mark.parametrize("frozen", [True, False])
def test_layers_that_are_not_finite_are_a_coded_error_never_stored(bilm_dir, frozen):
    nlp, examples = elmo_pipeline(bilm_dir, frozen=frozen)
    with torch.no_grad():
        get_bilm(nlp.get_pipe("elmo").model).lstm.W_proj[0][0][1, 2] = float("nan")
    with pytest.raises(DivergedRunError, match=r"E535.*'The cat sat \.'"):
        nlp("The cat sat .")
    training = "(and maybe others of its batch)" if frozen else "in training"
    with pytest.raises(DivergedRunError, match=rf"E535.*{re.escape(training)}"):
        nlp.update(examples[:2])
