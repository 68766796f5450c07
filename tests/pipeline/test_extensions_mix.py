"""A fixed `vector_mix` is refused unless every weight is finite in float32,
the precision the mix is applied in."""

import numpy
import pytest
import spacy

from spacy_elmo.errors import ElmoError
from spacy_elmo.extensions import fixed_mix_weights

BEYOND_FLOAT32 = [[1e39, 0.0, 0.0], [0.0, -1e39, 0.0], [10**400, 0, 0]]


@pytest.mark.parametrize("weights", BEYOND_FLOAT32)
def test_weights_beyond_float32_are_e401(weights):
    with pytest.raises(ElmoError, match=r"E401.*finite in float32"):
        fixed_mix_weights(weights, 3)


def test_the_largest_float32_weights_are_kept():
    largest = float(numpy.finfo(numpy.float32).max)
    weights = fixed_mix_weights([largest, -largest, 0.5], 3)
    assert weights.dtype == numpy.float32
    numpy.testing.assert_array_equal(weights, numpy.asarray([largest, -largest, 0.5], dtype=numpy.float32))


def test_a_mix_beyond_float32_is_refused_at_initialize(bilm_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"vector_mix": [1e39, 0.0, 0.0]})
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    with pytest.raises(ElmoError, match=r"E401.*1e\+39"):
        nlp.initialize()
