"""ELMo at the task encoder's output too (`spacy-elmo.ElmoTok2Vec.v2` with
`output_elmo`): two listeners in one component, each with its own mix, both
fed by the one `elmo` component."""

import copy
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.util import load_config, load_model_from_config
from thinc.api import Model

from spacy_elmo.layer_mixes import listener_mixes

from .pipelines import NER_ELMO
from .util import examples_of, make_docs

CONFIGS = Path(__file__).parent.parent.parent / "configs"
LISTENER = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo"}
TEXTS = ["Bob went to Paris and it was lovely .", "Frank went to Lima and it was dull ."]


def ner_with_output_elmo():
    model = copy.deepcopy(NER_ELMO)
    model["tok2vec"]["@architectures"] = "spacy-elmo.ElmoTok2Vec.v2"
    model["tok2vec"]["elmo"] = dict(LISTENER)
    model["tok2vec"]["output_elmo"] = {**LISTENER, "mix": {"@layers": "spacy-elmo.ScalarMix.v1", "l2_to_uniform": 0.01}}
    return model


def output_elmo_pipeline(bilm_dir, **elmo_config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config)
    nlp.add_pipe("ner", config={"model": ner_with_output_elmo()})
    examples = examples_of(nlp, make_docs(nlp, 12))
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    optimizer = nlp.initialize(lambda: examples)
    return nlp, examples, optimizer


def elmo_tok2vec(nlp):
    """The ElmoTok2Vec of the NER (the parser's "tok2vec" chains its own layers after it)."""
    return nlp.get_pipe("ner").model.get_ref("tok2vec").layers[0]


def mixes_of(nlp):
    tok2vec = elmo_tok2vec(nlp)
    return {name: tok2vec.get_ref(name).mix for name in ("elmo", "output_elmo")}


def params(mix):
    return numpy.concatenate([mix.get_param("s"), mix.get_param("gamma")]).copy()


def tok2vec_outputs(nlp, texts):
    docs = list(nlp.pipe(texts))
    return elmo_tok2vec(nlp).predict(docs)


def test_v2_without_output_elmo_is_v1():
    tok2vec = copy.deepcopy(NER_ELMO["tok2vec"])
    v1 = spacy.registry.resolve({"m": tok2vec})["m"]
    v2 = spacy.registry.resolve({"m": {**tok2vec, "@architectures": "spacy-elmo.ElmoTok2Vec.v2"}})["m"]
    assert [node.name for node in v2.walk()] == [node.name for node in v1.walk()]
    assert v2.get_dim("nO") == v1.get_dim("nO") == 32


def test_with_output_elmo_the_width_is_the_encoders():
    tok2vec = spacy.registry.resolve({"m": ner_with_output_elmo()["tok2vec"]})["m"]
    assert tok2vec.get_dim("nO") == 32  # what the NER sizes its first layer by, before the biLM is known
    assert tok2vec.get_ref("output_elmo") is not tok2vec.get_ref("elmo")


def test_both_listeners_of_one_component_receive_the_batch_and_both_mixes_learn(bilm_dir, tmp_path):
    nlp, examples, optimizer = output_elmo_pipeline(bilm_dir)
    elmo = nlp.get_pipe("elmo")
    mixes = mixes_of(nlp)
    tok2vec = elmo_tok2vec(nlp)
    assert set(map(id, elmo.listener_map["ner"])) == {id(tok2vec.get_ref("elmo")), id(tok2vec.get_ref("output_elmo"))}
    assert mixes["elmo"] is not mixes["output_elmo"]
    before = {name: params(mix) for name, mix in mixes.items()}
    losses = [nlp.update(examples, sgd=optimizer)["ner"] for _ in range(6)]
    assert numpy.isfinite(losses).all()
    for name, mix in mixes.items():  # each mix got gradients of its own
        assert numpy.abs(params(mix) - before[name]).max() > 1e-6, name
    assert numpy.abs(params(mixes["elmo"]) - params(mixes["output_elmo"])).max() > 1e-6
    assert set(listener_mixes(nlp)) == {"ner#elmo", "ner#output_elmo"}

    ents = [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(TEXTS)]
    vectors = tok2vec_outputs(nlp, TEXTS)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert len(loaded.get_pipe("elmo").listener_map["ner"]) == 2
    assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in loaded.pipe(TEXTS)] == ents
    for want, got in zip(vectors, tok2vec_outputs(loaded, TEXTS)):
        numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for name, mix in mixes_of(loaded).items():
        numpy.testing.assert_array_equal(params(mix), params(mixes[name]))


def test_a_fine_tuned_bilm_gets_the_gradients_of_both_listeners_of_one_component(bilm_dir, monkeypatch):
    nlp, examples, optimizer = output_elmo_pipeline(bilm_dir, frozen=False)
    elmo = nlp.get_pipe("elmo")
    events = []
    for listener in elmo.listeners:

        def receive(batch_id, outputs, backprop, listener=listener, original=listener.receive):
            def spy(d_outputs):
                events.append(("listener", listener.id, [d.copy() for d in d_outputs]))
                return backprop(d_outputs)

            original(batch_id, outputs, spy)

        listener.receive = receive
    begin_update = Model.begin_update

    def spy_begin_update(model, X):
        Y, backprop = begin_update(model, X)
        if model is not elmo.model:
            return Y, backprop

        def spy(dY):
            events.append(("bilm", None, [d.copy() for d in dY]))
            return backprop(dY)

        return Y, spy

    monkeypatch.setattr(Model, "begin_update", spy_begin_update)
    nlp.update(examples, sgd=optimizer)
    kinds = [kind for kind, _, _ in events]
    assert kinds == ["listener", "listener", "bilm"]  # the biLM's backward pass waits for both
    assert {who for _, who, _ in events[:2]} == {listener.id for listener in elmo.listeners}
    for total, first, second in zip(events[2][2], events[0][2], events[1][2]):
        numpy.testing.assert_allclose(total, first + second, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("pipe,name", [("ner", "ner_elmo"), ("textcat", "textcat_elmo")])
def test_the_output_elmo_config_differs_from_its_task_config_only_in_the_tok2vec(pipe, name):
    plain, output = (load_config(CONFIGS / f"{name}{suffix}.cfg") for suffix in ("", "_output"))
    tok2vec = output["components"][pipe]["model"]["tok2vec"]
    assert tok2vec["@architectures"] == "spacy-elmo.ElmoTok2Vec.v2"
    assert tok2vec["output_elmo"]["@architectures"] == "spacy-elmo.ElmoListener.v1"
    assert tok2vec["output_elmo"]["upstream"] == "elmo"
    del tok2vec["output_elmo"]
    tok2vec["@architectures"] = "spacy-elmo.ElmoTok2Vec.v1"
    assert output == plain


@pytest.mark.parametrize("name", ["ner_elmo.cfg", "ner_elmo_output.cfg", "textcat_elmo_output.cfg"])
def test_the_output_elmo_config_validates_as_spacy_debug_config_does(name, corpus_dir):
    from spacy.cli.debug_config import debug_config

    paths = {"paths.train": str(corpus_dir / "train.spacy"), "paths.dev": str(corpus_dir / "dev.spacy")}
    debug_config(CONFIGS / name, overrides=paths)  # exits with the validation errors on a bad config
    nlp = load_model_from_config(load_config(CONFIGS / name), auto_fill=True, validate=True)
    pipe = name.split("_")[0]
    assert len(nlp.get_pipe("elmo").listener_map[pipe]) == (2 if "output" in name else 1)
    tok2vec = elmo_tok2vec(nlp) if pipe == "ner" else nlp.get_pipe(pipe).model.get_ref("tok2vec")
    assert tok2vec.get_dim("nO") == 96


def test_replacing_both_listeners_of_a_component_keeps_its_predictions(bilm_dir, tmp_path):
    nlp, examples, optimizer = output_elmo_pipeline(bilm_dir)
    for _ in range(4):
        nlp.update(examples, sgd=optimizer)
    ents = [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(TEXTS)]
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo", "model.tok2vec.output_elmo"])
    assert nlp.get_pipe("elmo").listeners == []
    tok2vec = nlp.config["components"]["ner"]["model"]["tok2vec"]
    assert (
        tok2vec["elmo"]["@architectures"] == tok2vec["output_elmo"]["@architectures"] == "spacy-elmo.ElmoStandalone.v1"
    )
    assert tok2vec["output_elmo"]["mix"]["l2_to_uniform"] == 0.01  # each copy keeps its own mix's settings
    assert (tok2vec["elmo"]["mix"] or {}).get("l2_to_uniform", 0.0) == 0.0
    assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(TEXTS)] == ents
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in loaded.pipe(TEXTS)] == ents
