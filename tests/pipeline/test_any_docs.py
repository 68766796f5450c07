"""Any docs at all through the `elmo` component: finite layers of the right
shapes (and vectors), or a coded error, never another exception."""

import numpy
import pytest
import spacy
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from spacy.tokens import Doc

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.errors import ElmoError

from ..bilm.helpers import ANY_CHARACTER, TOKENS

TEXTS = st.one_of(
    st.text(ANY_CHARACTER, max_size=60),
    st.sampled_from(["", " ", "\n\n", "\t \u3000", "\ufeffHello", "a\x00b", "x" * 500]),
    st.lists(st.text(ANY_CHARACTER, min_size=1, max_size=6), min_size=50, max_size=150).map(" ".join),  # long
)


@pytest.fixture(scope="module")
def nlp(tmp_path_factory):
    torch.manual_seed(0)
    options = BiLMOptions(
        char_embedding_dim=4, filters=[(1, 4), (2, 4), (3, 8)], n_highway=1, lstm_dim=16, projection_dim=8, n_layers=2
    )
    path = tmp_path_factory.mktemp("tiny_bilm")
    BiLM(options).save_allennlp(path)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "elmo",
        config={
            "set_vector_hooks": True,
            "model": {
                "@architectures": "spacy-elmo.BiLM.v1",
                "max_batch_tokens": 64,
                "window_size": 16,
            },
        },
    )
    nlp.get_pipe("elmo").initialize(options_file=str(path))
    return nlp


def make_doc(nlp, item, sentence_starts):
    """A doc from a text or a list of words; None where spaCy itself cannot make one."""
    try:
        doc = nlp.make_doc(item) if isinstance(item, str) else Doc(nlp.vocab, words=item)
    except (UnicodeEncodeError, ValueError):  # e.g. a lone surrogate: spaCy's StringStore refuses it
        return None
    if sentence_starts and len(doc):
        for token, start in zip(doc, sentence_starts):
            token.is_sent_start = start if token.i else True
    return doc


@settings(max_examples=50, deadline=None)
@given(
    items=st.lists(st.one_of(TEXTS, st.lists(TOKENS, max_size=20)), min_size=1, max_size=4),
    sentence_starts=st.lists(st.booleans(), max_size=30),
)
def test_any_docs_give_finite_layers_or_a_coded_error(nlp, items, sentence_starts):
    docs = [make_doc(nlp, item, sentence_starts) for item in items]
    assume(all(doc is not None for doc in docs))
    try:
        docs = list(nlp.pipe(docs, batch_size=3))
    except ElmoError:
        return
    for doc in docs:
        layers = doc._.elmo.layers
        assert layers.shape == (3, len(doc), 16)
        assert numpy.isfinite(layers).all()
        if len(doc):
            assert doc.vector.shape == (16,) and numpy.isfinite(doc.vector).all()
            assert numpy.isfinite(doc[-1].vector).all() and numpy.isfinite(doc[: len(doc) // 2 + 1].vector).all()
        else:
            assert doc._.elmo_vector is None
