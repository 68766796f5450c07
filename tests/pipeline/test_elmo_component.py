import numpy
import pytest
import spacy
from spacy.tokens import DocBin

from spacy_elmo.errors import ElmoError

from .pipelines import NER_ELMO, elmo_pipeline


def test_building_reads_no_file_and_unloaded_component_says_so():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    with pytest.raises(ElmoError, match="E403"):
        nlp("No weights yet.")


def test_doc_data_and_getters(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    doc = nlp("The cat sat . Then it slept .")
    data = doc._.elmo
    assert data.layers.shape == (3, len(doc), 32)
    average = data.layers.mean(axis=0)
    numpy.testing.assert_allclose(doc[1]._.elmo_vector, average[1], rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(doc[1:3]._.elmo_vector, average[1:3].mean(axis=0), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(doc._.elmo_vector, average.mean(axis=0), rtol=1e-5, atol=1e-6)
    unprocessed = nlp.make_doc("Not processed")
    assert unprocessed._.elmo is None and unprocessed._.elmo_vector is None and unprocessed[0]._.elmo_vector is None


@pytest.mark.parametrize("mix,expected", [("top", [0, 0, 1]), (0, [1, 0, 0]), ([0.5, 0.25, 0.25], [0.5, 0.25, 0.25])])
def test_fixed_mixes(bilm_dir, mix, expected):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, vector_mix=mix)
    doc = nlp("A short test .")
    want = numpy.tensordot(numpy.asarray(expected, dtype="f"), doc._.elmo.layers, axes=1)
    numpy.testing.assert_allclose(doc[2]._.elmo_vector, want[2], rtol=1e-5, atol=1e-6)


def test_bad_mix_and_dtype(bilm_dir):
    with pytest.raises(ElmoError, match="E401"):  # at initialize, once the biLM's layers are known
        elmo_pipeline(bilm_dir, with_ner=False, vector_mix=7)
    with pytest.raises(ElmoError, match="E406"):
        spacy.blank("en").add_pipe("elmo", config={"store_dtype": "int8"})


def test_vector_hooks(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, set_vector_hooks=True)
    a, b = nlp("The cat sat ."), nlp("A dog ran .")
    numpy.testing.assert_allclose(a.vector, a._.elmo_vector)
    numpy.testing.assert_allclose(a[1].vector, a[1]._.elmo_vector)
    sim = a.similarity(b)
    va, vb = a._.elmo_vector, b._.elmo_vector
    assert sim == pytest.approx(float(va @ vb / numpy.linalg.norm(va) / numpy.linalg.norm(vb)), rel=1e-5)
    assert a[1].similarity(a[1]) == pytest.approx(1.0, rel=1e-5)
    assert a[0:0].vector.shape == (32,) and not a[0:0].vector.any()


def test_empty_docs_and_whitespace_tokens(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir)
    docs = list(nlp.pipe(["", "  ", "a \n\n b", "x"]))
    assert [d._.elmo.layers.shape[1] for d in docs] == [len(d) for d in docs]
    assert all(numpy.isfinite(d._.elmo.layers).all() for d in docs)
    assert docs[0]._.elmo_vector is None


def test_doc_alone_equals_doc_in_a_batch(bilm_dir):
    nlp, _ = elmo_pipeline(
        bilm_dir,
        with_ner=False,
        model={"@architectures": "spacy-elmo.BiLM.v1", "max_batch_tokens": 40, "window_size": 6},
    )
    texts = [
        "One two three four five six seven eight nine .",
        "Short .",
        "A much longer sentence about nothing at all, really .",
    ]
    alone = nlp(texts[0])._.elmo.layers
    batched = list(nlp.pipe(texts[1:] + texts[:1], batch_size=3))[-1]._.elmo.layers
    assert numpy.abs(alone - batched).max() <= 1e-5


def test_sentences_are_read_separately(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    nlp.add_pipe("sentencizer", first=True)
    doc = nlp("The cat sat . The dog ran .")
    second = nlp("The dog ran .")
    assert numpy.abs(doc._.elmo.layers[:, 4:] - second._.elmo.layers).max() <= 1e-5


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_docbin_round_trip(bilm_dir, dtype):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, store_dtype=dtype)
    docs = list(nlp.pipe(["The cat sat .", "", "Hello world !"]))
    data = DocBin(docs=docs, store_user_data=True).to_bytes()
    restored = list(DocBin(store_user_data=True).from_bytes(data).get_docs(nlp.vocab))
    for before, after in zip(docs, restored):
        assert after._.elmo.layers.dtype == numpy.dtype(dtype)
        assert numpy.array_equal(before._.elmo.layers, after._.elmo.layers)
        assert numpy.array_equal(before._.elmo.mix, after._.elmo.mix)
    numpy.testing.assert_allclose(restored[0][1]._.elmo_vector, docs[0][1]._.elmo_vector)


def test_multiprocessing_gives_the_same_vectors(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    texts = [f"Text number {i} is here ." for i in range(8)]
    single = [d._.elmo.layers for d in nlp.pipe(texts, n_process=1)]
    multi = [d._.elmo.layers for d in nlp.pipe(texts, n_process=2, batch_size=2)]
    for a, b in zip(single, multi):
        assert numpy.abs(a - b).max() <= 1e-6


def test_listener_reads_doc_elmo_at_prediction(bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir)
    listener = nlp.get_pipe("elmo").listeners[0]
    doc = nlp("Bob went to Paris .")
    listener.upstream_model = None  # it must not need the biLM when doc._.elmo is there
    got = listener.predict([doc])[0]
    mix = listener.mix
    weights = numpy.exp(mix.get_param("s")) / numpy.exp(mix.get_param("s")).sum()
    want = mix.get_param("gamma")[0] * numpy.tensordot(weights, doc._.elmo.layers, axes=1)
    numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    doc._.elmo.layers[:] = 0.0
    assert not listener.predict([doc])[0].any()
    with pytest.raises(ElmoError, match="E409"):
        listener.predict([nlp.make_doc("not processed")])


def test_frozen_training_cache_serves_identical_outputs(bilm_dir):
    nlp, examples = elmo_pipeline(bilm_dir)
    elmo = nlp.get_pipe("elmo")
    assert elmo.frozen
    weights_before = elmo.model.layers[0].shims[0]._model.lstm.W_input[0].detach().clone()
    optimizer = nlp.create_optimizer()
    nlp.update(examples[:8], sgd=optimizer)
    assert len(elmo.train_cache) == 8 and elmo.train_cache.misses == 8
    cached = elmo._frozen_outputs([eg.predicted for eg in examples[:8]])
    fresh = elmo.predict([eg.predicted for eg in examples[:8]])
    assert elmo.train_cache.hits == 8
    for a, b in zip(cached, fresh):
        assert numpy.array_equal(a, b)
    nlp.update(examples[:8], sgd=optimizer)
    assert elmo.model.layers[0].shims[0]._model.lstm.W_input[0].equal(weights_before)


def test_unfrozen_biLM_is_fine_tuned_with_one_backward_pass(bilm_dir, monkeypatch):
    import torch

    nlp, examples = elmo_pipeline(bilm_dir, frozen=False)
    nlp.add_pipe(
        "textcat",
        config={
            "model": {
                "@architectures": "spacy.TextCatReduce.v1",
                "exclusive_classes": True,
                "use_reduce_first": False,
                "use_reduce_last": False,
                "use_reduce_max": False,
                "use_reduce_mean": True,
                "tok2vec": NER_ELMO["tok2vec"],
            }
        },
    )
    nlp.initialize(lambda: examples)
    elmo = nlp.get_pipe("elmo")
    assert len(elmo.listeners) == 2
    bilm = elmo.model.layers[0].shims[0]._model
    before = bilm.lstm.W_input[0].detach().clone()
    calls = []
    original = torch.autograd.backward
    monkeypatch.setattr(torch.autograd, "backward", lambda *a, **k: (calls.append(1), original(*a, **k))[1])
    optimizer = nlp.create_optimizer()
    for _ in range(3):  # the parser's output layer starts at zero: no gradient on the first step
        nlp.update(examples[:6], sgd=optimizer)
    assert len(calls) == 3  # one backward pass per batch for two listeners
    assert not bilm.lstm.W_input[0].detach().equal(before)
    assert len(elmo.train_cache) == 0
