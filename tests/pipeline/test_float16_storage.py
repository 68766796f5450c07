"""store_dtype = "float16" never stores inf: a doc whose layers float16 cannot
hold keeps them as float32, with a warning (W001); the others are float16."""

import numpy
import pytest
import torch

from spacy_elmo.models.bilm import get_bilm
from spacy_elmo.pipeline.layer_cache import LayerCache

from ..numeric import assert_close_to_scale
from .pipelines import elmo_pipeline

FLOAT16_MAX = float(numpy.finfo(numpy.float16).max)  # 65,504
# The fixture biLM's token layer reaches 7.06 on LARGE and 1.70 on SMALL: its
# projection scaled by 20,000 takes LARGE beyond float16's range, not SMALL.
LARGE, SMALL = "The cat sat .", "a"
SCALE = 20_000.0


def scaled_pipeline(bilm_dir, store_dtype):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, store_dtype=store_dtype)
    bilm = get_bilm(nlp.get_pipe("elmo").model)
    with torch.no_grad():
        bilm.token_encoder.projection.weight.mul_(SCALE)
        bilm.token_encoder.projection.bias.mul_(SCALE)
    bilm.clear_token_cache()  # weights changed in place
    return nlp


def test_float16_keeps_float32_for_a_doc_beyond_its_range_with_a_warning(bilm_dir):
    want = [doc._.elmo.layers for doc in scaled_pipeline(bilm_dir, "float32").pipe([LARGE, SMALL])]
    assert numpy.abs(want[0]).max() > 1.5 * FLOAT16_MAX and numpy.abs(want[1]).max() < FLOAT16_MAX / 1.5
    nlp = scaled_pipeline(bilm_dir, "float16")
    with pytest.warns(
        UserWarning,
        match=r"W001\] store_dtype is 'float16', but the layers of 1 of the 2 docs.*"
        r"stored as float32.*\[components\.elmo\]",
    ) as caught:
        large, small = nlp.pipe([LARGE, SMALL])
    assert len([w for w in caught if "W001" in str(w.message)]) == 1  # one warning for the batch
    assert large._.elmo.layers.dtype == numpy.float32
    assert numpy.array_equal(large._.elmo.layers, want[0])
    assert small._.elmo.layers.dtype == numpy.float16
    assert_close_to_scale(small._.elmo.layers.astype("float32"), want[1], rtol=1e-3)
    for doc in (large, small):
        assert numpy.isfinite(doc._.elmo.layers).all()
        assert numpy.isfinite(doc._.elmo_vector).all() and numpy.isfinite(doc[0]._.elmo_vector).all()


def test_the_float16_training_cache_keeps_float32_for_layers_beyond_its_range():
    cache = LayerCache(2**20, "float16")
    large = numpy.full((3, 2, 4), 2.0 * FLOAT16_MAX, dtype="float32")
    small = numpy.full((3, 2, 4), 0.5, dtype="float32")
    cache.add("large", large)
    cache.add("small", small)
    assert numpy.array_equal(cache.get("large"), large)
    assert numpy.array_equal(cache.get("small"), small)
    assert cache.n_bytes == large.nbytes + small.nbytes // 2  # float32 where needed, float16 elsewhere
