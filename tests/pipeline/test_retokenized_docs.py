"""A doc retokenized after the `elmo` component ran: every read of its layers
is a coded error (E410), never the rows of other tokens."""

import numpy
import pytest
from spacy.tokens import DocBin

from spacy_elmo.errors import ElmoError

from .pipelines import elmo_pipeline

TEXT = "The big black cat sat on the mat and then it slept ."


@pytest.fixture(scope="module")
def nlp(fixture_paths, tmp_path_factory):
    import shutil

    path = tmp_path_factory.mktemp("bilm")
    shutil.copy(fixture_paths[0], path / "options.json")
    shutil.copy(fixture_paths[1], path / "weights.hdf5")
    nlp, _ = elmo_pipeline(path, set_vector_hooks=True)
    return nlp


def every_read(doc, listener):
    """Each way a user or a listener reads the layers of `doc`."""
    return {
        "doc._.elmo": lambda: doc._.elmo,
        "token elmo_vector": lambda: doc[3]._.elmo_vector,
        "span elmo_vector": lambda: doc[2:4]._.elmo_vector,
        "doc elmo_vector": lambda: doc._.elmo_vector,
        "token .vector hook": lambda: doc[3].vector,
        "doc .vector hook": lambda: doc.vector,
        "similarity hook": lambda: doc[1].similarity(doc[3]),
        "listener": lambda: listener.predict([doc]),
    }


@pytest.mark.parametrize("change", ["merge", "split", "merge and split"])
@pytest.mark.parametrize(
    "read",
    [
        "doc._.elmo",
        "token elmo_vector",
        "span elmo_vector",
        "doc elmo_vector",
        "token .vector hook",
        "doc .vector hook",
        "similarity hook",
        "listener",
    ],
)
def test_every_read_of_a_retokenized_doc_is_a_coded_error(nlp, change, read):
    doc = nlp(TEXT)
    with doc.retokenize() as retokenizer:
        if change in ("merge", "merge and split"):
            retokenizer.merge(doc[0:3])
        if change in ("split", "merge and split"):
            retokenizer.split(doc[5], ["o", "n"], heads=[(doc[5], 1), doc[4]])
    with pytest.raises(ElmoError, match=r"E410.*retokeni[sz]ed.*before"):
        every_read(doc, nlp.get_pipe("elmo").listeners[0])[read]()


def test_a_doc_retokenized_before_the_component_is_read_as_it_is(nlp):
    doc = nlp.make_doc(TEXT)
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:3])
    doc = nlp(doc)
    assert doc._.elmo.layers.shape[1] == len(doc) == 11
    assert doc[3]._.elmo_vector is not None and doc.vector.shape == (32,)


def test_running_the_component_again_replaces_the_layers(nlp):
    doc = nlp(TEXT)
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:3])
    doc = nlp.get_pipe("elmo")(doc)
    assert doc._.elmo.layers.shape[1] == len(doc)
    fresh = nlp.make_doc(TEXT)
    with fresh.retokenize() as retokenizer:
        retokenizer.merge(fresh[0:3])
    numpy.testing.assert_allclose(doc[3]._.elmo_vector, nlp(fresh)[3]._.elmo_vector, rtol=1e-5, atol=1e-6)


def test_the_check_travels_through_a_docbin(nlp):
    doc = nlp(TEXT)
    restored = next(
        DocBin(docs=[doc], store_user_data=True)
        .from_bytes(DocBin(docs=[doc], store_user_data=True).to_bytes())
        .get_docs(nlp.vocab)
    )
    numpy.testing.assert_array_equal(restored[3]._.elmo_vector, doc[3]._.elmo_vector)
    with restored.retokenize() as retokenizer:
        retokenizer.merge(restored[0:3])
    with pytest.raises(ElmoError, match="E410"):
        restored[3]._.elmo_vector


def test_a_merge_next_to_the_read_token_is_noticed_by_a_token_read(nlp):
    doc = nlp(TEXT)
    with doc.retokenize() as retokenizer:  # same count: a merge and a split elsewhere
        retokenizer.merge(doc[0:2])
        retokenizer.split(doc[5], ["o", "n"], heads=[(doc[5], 1), doc[4]])
    assert len(doc) == 13
    with pytest.raises(ElmoError, match="E410"):
        doc[1]._.elmo_vector
