"""A listener's mix is whatever layer its config names: found through the
ref "mix", never by the name of `ScalarMix`."""

import numpy
import spacy

from .pipelines import AVERAGE_MIX, pipeline_with


def test_a_mix_of_another_kind_trains_and_predicts_through_the_listener(bilm_dir, tmp_path):
    nlp, examples = pipeline_with({"@layers": AVERAGE_MIX}, bilm_dir)
    optimizer = nlp.initialize(lambda: examples)
    listener = nlp.get_pipe("elmo").listeners[0]
    assert listener.mix.name == "test-average-mix"
    losses = [nlp.update(examples, sgd=optimizer)["ner"] for _ in range(8)]
    # (the parser's output layer starts at zero: its first loss is not a trained one)
    assert numpy.isfinite(losses).all() and losses[-1] < losses[1]
    doc = nlp("Bob went to Paris .")
    numpy.testing.assert_allclose(listener.predict([doc])[0], doc._.elmo.layers.mean(axis=0), rtol=1e-6)
    want = [(e.start, e.end, e.label_) for e in doc.ents]
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert [(e.start, e.end, e.label_) for e in loaded("Bob went to Paris .").ents] == want

    from spacy_elmo.layer_mixes import listener_mixes

    assert listener_mixes(loaded) == {
        "ner": {"weights": None, "gamma": None, "upstream": "elmo", "layer": "test-average-mix"}
    }


def test_the_scalar_mix_inside_a_larger_mix_is_the_one_reported(bilm_dir):
    nlp, examples = pipeline_with(
        {
            "@layers": "chain.v1",
            "*": {
                "mix": {"@layers": "spacy-elmo.ScalarMix.v1"},
                "scale": {"@layers": "Dropout.v1", "rate": 0.0},
            },
        },
        bilm_dir,
    )
    nlp.initialize(lambda: examples)
    from spacy_elmo.layer_mixes import listener_mixes

    mix = listener_mixes(nlp)["ner"]
    assert numpy.allclose(mix["weights"], [1 / 3] * 3) and mix["gamma"] == 1.0


def test_the_elmo_dropout_keeps_its_own_rate_whatever_the_trainers_dropout():
    """spaCy sets every node's "dropout_rate" to [training] dropout at each update; the
    listener's ELMo dropout is a setting of its own and must keep its rate."""
    from thinc.api import set_dropout_rate

    from spacy_elmo.models.listener import mix_docs
    from spacy_elmo.models.scalar_mix import ScalarMix

    model = mix_docs(ScalarMix(n_layers=3), dropout=0.5)
    X = [numpy.ones((3, 500, 8), dtype="f"), numpy.ones((3, 300, 8), dtype="f")]
    model.initialize(X=X)
    set_dropout_rate(model, 0.0)  # what Parser.update does with drop = [training] dropout
    Y, backprop = model(X, is_train=True)
    values = numpy.concatenate([y.ravel() for y in Y])
    dropped = numpy.mean(values == 0.0)
    assert 0.45 < dropped < 0.55, dropped
    assert numpy.allclose(values[values != 0.0], 2.0)  # the uniform mix of ones, scaled by 1 / (1 - 0.5)
    dX = backprop([numpy.ones_like(y) for y in Y])
    assert sum(numpy.count_nonzero(dx) for dx in dX) > 0
    assert all(numpy.allclose(y, 1.0) for y in model.predict(X))  # no dropout at prediction
