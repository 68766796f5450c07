"""`BiLM.encode_indexed` and `top_layer_indexed` take word indices and
sentence lengths as integers only: a float would be truncated to another word."""

import numpy
import pytest
import torch

from spacy_elmo.bilm.char_ids import distinct_words
from spacy_elmo.errors import InputError

from .helpers import small_bilm

SENTENCES = [["a", "b", "c"], ["b", "d"]]
NOT_INTEGERS = {
    "float64": lambda array: array + 0.9,  # 2.9 read as word 2, 3.9 as 3 tokens
    "float32": lambda array: array.astype("float32"),
    "bool": lambda array: array > 2,
    "<U1": lambda array: array.astype("<U1"),
}


@pytest.mark.parametrize("entry", ["encode_indexed", "top_layer_indexed"])
@pytest.mark.parametrize("name", ["index", "lengths"])
@pytest.mark.parametrize("dtype", list(NOT_INTEGERS))
def test_indices_or_lengths_that_are_not_integers_are_refused(entry, name, dtype):
    words, index, lengths = distinct_words(SENTENCES)
    arrays = {"index": index, "lengths": lengths}
    arrays[name] = NOT_INTEGERS[dtype](arrays[name])
    with pytest.raises(InputError, match=rf"E109.*{name} of dtype {numpy.dtype(dtype)}"):
        getattr(small_bilm(), entry)(words, arrays["index"], arrays["lengths"])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint16"])
def test_integer_indices_of_any_width_give_the_same_layers(dtype):
    model = small_bilm()
    words, index, lengths = distinct_words(SENTENCES)
    with torch.inference_mode():
        expected = model.encode_indexed(words, index, lengths)
        got = model.encode_indexed(words, index.astype(dtype), lengths.astype(dtype))
        empty = model.encode_indexed(words[:2], [], [])  # no sentences: an empty list is no float
    assert torch.equal(got, expected)
    assert empty.shape == (model.n_layers, 0, model.output_dim)
