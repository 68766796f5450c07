"""The training cache of a frozen `elmo` serves the layers of the biLM it
holds now: new weights, however loaded, empty it."""

import numpy
import pytest
import torch

from spacy_elmo.models.bilm import get_bilm
from spacy_elmo.models.listener import ElmoListenerModel

from .pipelines import elmo_pipeline


@pytest.mark.parametrize("load", ["from_bytes", "from_disk", "model.from_bytes"])
def test_the_training_cache_is_emptied_when_new_weights_are_loaded(bilm_dir, tmp_path, monkeypatch, load):
    nlp, examples = elmo_pipeline(bilm_dir)
    elmo = nlp.get_pipe("elmo")
    other = elmo_pipeline(bilm_dir, with_ner=False)[0].get_pipe("elmo")
    with torch.no_grad():
        for param in get_bilm(other.model).parameters():
            param.mul_(1.5)
    get_bilm(other.model).clear_token_cache()  # weights changed in place (see BiLM.clear_token_cache)
    received = []
    original = ElmoListenerModel.receive
    monkeypatch.setattr(
        ElmoListenerModel,
        "receive",
        lambda self, batch_id, outputs, backprop: (
            received.append([x.copy() for x in outputs]),
            original(self, batch_id, outputs, backprop),
        )[1],
    )
    optimizer = nlp.create_optimizer()
    nlp.update(examples[:4], sgd=optimizer)  # fills the cache with the first biLM's layers
    assert len(elmo.train_cache) == 4
    if load == "from_bytes":
        elmo.from_bytes(other.to_bytes())
    elif load == "from_disk":
        other.to_disk(tmp_path / "other")
        elmo.from_disk(tmp_path / "other")
    else:  # past the component: the cache sees that its biLM was replaced
        elmo.model.from_bytes(other.model.to_bytes())
    nlp.update(examples[:4], sgd=optimizer)
    want = other.predict([eg.predicted for eg in examples[:4]])
    for first, got, expected in zip(received[0], received[-1], want):
        assert numpy.abs(first - expected).max() > 1e-3  # the two biLMs differ
        numpy.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("store_dtype", ["float32", "float16"])
@pytest.mark.parametrize("train_cache_mb", [1024, 0])
def test_listeners_get_the_same_layers_in_every_epoch(bilm_dir, monkeypatch, store_dtype, train_cache_mb):
    # The cache keeps the layers in store_dtype: the first epoch, which computes them,
    # hands over what later epochs will read back (and a doc the budget leaves out too).
    nlp, examples = elmo_pipeline(bilm_dir, store_dtype=store_dtype, train_cache_mb=train_cache_mb)
    received = []
    original = ElmoListenerModel.receive
    monkeypatch.setattr(
        ElmoListenerModel,
        "receive",
        lambda self, batch_id, outputs, backprop: (
            received.append([x.copy() for x in outputs]),
            original(self, batch_id, outputs, backprop),
        )[1],
    )
    optimizer = nlp.create_optimizer()
    for _ in range(2):
        nlp.update(examples[:4], sgd=optimizer)
    exact = nlp.get_pipe("elmo").predict([eg.predicted for eg in examples[:4]])
    for first, second, layers in zip(received[0], received[-1], exact):
        assert first.dtype == second.dtype == numpy.float32
        assert numpy.array_equal(first, second)
        assert numpy.array_equal(first, layers.astype(store_dtype).astype("float32"))
