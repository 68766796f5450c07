"""`spacy-elmo.BiLM.v1`, the biLM as a Thinc model: its token cache through
Thinc's optimiser and deserialisation, and torch on one thread in forked workers."""

import multiprocessing

import numpy
import spacy
import torch
from thinc.api import Adam

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.models.bilm import BiLMModel, get_bilm, set_bilm

from ..bilm.helpers import SMALL

TEXTS = ["The cat sat on the mat .", "A dog sat on a cat ."]


def thinc_bilm(seed: int = 0):
    torch.manual_seed(seed)
    model = BiLMModel()
    set_bilm(model, BiLM(BiLMOptions(**SMALL)))
    return model


def make_docs():
    nlp = spacy.blank("en")
    return [nlp.make_doc(text) for text in TEXTS]


def predict_with_an_empty_cache(model, docs):
    """What a copy of `model`'s biLM, with an empty token cache, predicts."""
    bilm = BiLM(get_bilm(model).options)
    bilm.load_state_dict(get_bilm(model).state_dict())
    copy = BiLMModel()
    set_bilm(copy, bilm)
    return copy.predict(docs)


def test_a_thinc_optimiser_step_is_never_served_stale():
    # The path of a component with `frozen = false`: begin_update, backprop,
    # finish_update (Thinc's optimiser writes the weights in place), predict.
    model = thinc_bilm()
    docs = make_docs()
    stale = model.predict(docs)  # fills the token cache
    outputs, backprop = model.begin_update(docs)
    backprop([model.ops.xp.ones_like(layers) for layers in outputs])
    model.finish_update(Adam(0.05))
    got, expected = model.predict(docs), predict_with_an_empty_cache(model, docs)
    for layers, fresh, old in zip(got, expected, stale):
        numpy.testing.assert_allclose(layers, fresh, rtol=1e-5, atol=1e-6)
        assert numpy.abs(layers - old).max() > 1e-3  # the step changed them: stale vectors would show


def test_weights_from_bytes_replace_the_cached_ones():
    source, target = thinc_bilm(seed=0), thinc_bilm(seed=1)
    docs = make_docs()
    stale = target.predict(docs)
    target.from_bytes(source.to_bytes())
    for layers, expected, old in zip(target.predict(docs), source.predict(docs), stale):
        assert numpy.array_equal(layers, expected)
        assert numpy.abs(layers - old).max() > 1e-3


def torch_threads() -> int:
    return torch.get_num_threads()


def test_a_forked_worker_runs_torch_on_one_thread():
    # As nlp.pipe(n_process=2) forks its workers: torch's thread pool does not
    # survive a fork, so each worker runs torch on one thread.
    BiLMModel()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            in_worker = pool.apply(torch_threads)
        in_parent = torch.get_num_threads()
    finally:
        torch.set_num_threads(threads)
    assert (in_parent, in_worker) == (2, 1)


def test_prediction_from_orth_ids_gives_the_layers_of_the_words():
    # Docs of two vocabs in one batch, boundary texts and repeated words: each doc's
    # layers are those encode_words gives its sentences.
    model = thinc_bilm()
    other = spacy.blank("en")
    docs = make_docs() + [other.make_doc("<S> cat </S> cat unseen"), spacy.blank("en").make_doc("")]
    predicted = model.predict(docs)
    bilm = get_bilm(model)
    with torch.inference_mode():
        for doc, layers in zip(docs, predicted):
            want = bilm.encode_words([[t.text for t in doc]]).numpy()
            assert layers.shape == want.shape and numpy.array_equal(layers, want)
