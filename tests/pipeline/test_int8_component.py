"""`[components.elmo.model] precision = "int8"`: the `elmo` component's biLM with int8
LSTM products where they pay on this CPU, float32 with a warning where they do not;
"int8-always": int8 products whatever the speed."""

import warnings

import numpy
import pytest
import spacy

from spacy_elmo.bilm import int8 as int8_module

from .pipelines import layers, override, save

MEAN_COSINE, WORST_COSINE = 0.999, 0.99  # per layer, as tests/bilm/test_int8.py


def token_cosines(got, expected):
    """Per layer, every token's cosine: (n_layers + 1, n_tokens)."""
    a, b = numpy.concatenate(got, axis=1), numpy.concatenate(expected, axis=1)
    return (a * b).sum(-1) / (numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1))


@pytest.mark.parametrize(
    "setting,pays",
    [("int8", True), ("int8-always", False)],
    ids=["int8 where it pays", "int8-always where it does not"],
)
def test_the_lstms_run_in_int8(tmp_path, bilm_dir, monkeypatch, setting, pays):
    monkeypatch.setattr(int8_module, "int8_pays", lambda shapes, threads: pays)
    path = save(tmp_path, bilm_dir)
    expected = layers(spacy.load(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = layers(spacy.load(path, config=override(precision=setting)))
    cos = token_cosines(got, expected)
    assert numpy.array_equal(numpy.concatenate(got, axis=1)[0], numpy.concatenate(expected, axis=1)[0])
    assert (cos[1:].mean(axis=1) >= MEAN_COSINE).all() and (cos[1:].min(axis=1) >= WORST_COSINE).all(), cos
    assert not all(numpy.array_equal(a, b) for a, b in zip(got, expected))


def test_precision_int8_where_it_is_slower_is_float32_with_a_warning(tmp_path, bilm_dir, monkeypatch):
    monkeypatch.setattr(int8_module, "int8_pays", lambda shapes, threads: False)
    path = save(tmp_path, bilm_dir)
    expected = layers(spacy.load(path))
    with pytest.warns(UserWarning, match='"int8"'):
        got = layers(spacy.load(path, config=override(precision="int8")))
    assert all(numpy.array_equal(a, b) for a, b in zip(got, expected))
