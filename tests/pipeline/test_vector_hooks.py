"""`set_vector_hooks`: `.vector` and `.similarity()` follow doc._.elmo wherever it goes."""

import numpy
import pytest
from spacy.tokens import DocBin

from spacy_elmo.errors import ElmoError

from .pipelines import elmo_pipeline

TEXTS = ["The cat sat on the mat .", "A dog ran .", ""]


@pytest.fixture
def hooked(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, set_vector_hooks=True)
    return nlp, list(nlp.pipe(TEXTS))


def assert_same_vectors(restored, docs):
    for before, after in zip(restored, docs):
        assert after._.elmo is not None  # reading doc._.elmo puts the hooks back
        assert after.vector.shape == before.vector.shape == (32,)
        numpy.testing.assert_array_equal(after.vector, before.vector)
        if len(after):
            numpy.testing.assert_array_equal(after[1:3].vector, before[1:3].vector)
            numpy.testing.assert_array_equal(after[0].vector, before[0].vector)
            assert after.has_vector and after.vector_norm == pytest.approx(before.vector_norm)
    assert restored[0].similarity(restored[1]) == pytest.approx(docs[0].similarity(docs[1]))
    assert restored[0].similarity(restored[1]) != 0.0


def test_vectors_survive_a_docbin(hooked):
    nlp, docs = hooked
    data = DocBin(docs=docs, store_user_data=True).to_bytes()
    restored = list(DocBin(store_user_data=True).from_bytes(data).get_docs(nlp.vocab))
    assert_same_vectors(docs, restored)


def test_vectors_survive_other_processes(hooked):
    nlp, docs = hooked
    restored = list(nlp.pipe(TEXTS, n_process=2, batch_size=2))
    assert_same_vectors(docs, restored)


def test_without_the_setting_no_hooks_travel(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    doc = nlp("The cat sat .")
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    restored = next(DocBin(store_user_data=True).from_bytes(data).get_docs(nlp.vocab))
    assert restored._.elmo is not None and not restored._.elmo.vector_hooks
    assert "vector" not in restored.user_hooks


def test_an_unprocessed_doc_is_an_error_never_zeros(hooked):
    nlp, docs = hooked
    from spacy_elmo.extensions import set_vector_hooks

    doc = nlp.make_doc("not processed")
    set_vector_hooks(doc)
    with pytest.raises(ElmoError, match="E402"):
        doc.vector
