"""Any tokens at all: finite layers of the right shapes, or a coded error."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids
from spacy_elmo.bilm.char_ids import PAD_CHAR
from spacy_elmo.errors import ElmoError

from .helpers import TOKENS

SENTENCES = st.lists(st.lists(TOKENS, max_size=12), max_size=5)
NOT_TEXT = st.one_of(st.integers(), st.none(), st.binary(max_size=4), st.floats())


@pytest.fixture(scope="module")
def tiny_bilm():
    torch.manual_seed(0)
    options = BiLMOptions(
        char_embedding_dim=4, filters=[(1, 4), (2, 4), (3, 8)], n_highway=1, lstm_dim=16, projection_dim=8, n_layers=2
    )
    return BiLM(options).eval()


@settings(max_examples=50, deadline=None)
@given(sentences=SENTENCES)
def test_any_tokens_give_finite_layers_of_the_right_shape(tiny_bilm, sentences):
    ids = batch_to_ids(sentences)
    longest = max((len(s) for s in sentences), default=0)
    assert ids.shape == (len(sentences), longest, 50) and ids.dtype == torch.int64
    assert ids.numel() == 0 or (int(ids.min()) >= 0 and int(ids.max()) <= PAD_CHAR + 1)
    lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
    assert torch.equal((ids[:, :, 0] > 0).sum(dim=1), lengths)  # every token, even "", is present
    with torch.inference_mode():
        out = tiny_bilm(ids)
    assert out.layers.shape == (3, len(sentences), longest, 16)
    assert torch.isfinite(out.layers).all()
    assert torch.equal(out.mask, ids[:, :, 0] > 0)


@settings(max_examples=50, deadline=None)
@given(sentences=SENTENCES, bad=NOT_TEXT, where=st.integers(0, 100))
def test_anything_but_text_is_a_coded_error(sentences, bad, where):
    sentences = sentences + [[]]
    sentence = sentences[where % len(sentences)]
    sentence.insert(where % (len(sentence) + 1), bad)
    with pytest.raises(ElmoError, match="E103"):
        batch_to_ids(sentences)
