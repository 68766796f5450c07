"""A listener replaced by its own copy of the biLM (`nlp.replace_listeners`)
predicts what it predicted while listening: the copy reads the sentences the
`elmo` component read, not boundaries that components after `elmo` set."""

import copy

import numpy
import pytest
import spacy
import torch
from spacy.language import Language
from spacy.training import Example

from spacy_elmo.models.bilm import get_bilm

from .pipelines import NER_ELMO
from .util import examples_of, make_docs

TOK2VEC = NER_ELMO["tok2vec"]
TEXTCAT = {
    "model": {
        "@architectures": "spacy.TextCatReduce.v1",
        "exclusive_classes": False,
        "use_reduce_first": False,
        "use_reduce_last": False,
        "use_reduce_max": False,
        "use_reduce_mean": True,
        "tok2vec": TOK2VEC,
    }
}
TEXTS = [
    "Bob went to Paris . It was lovely and fine . Then Carol came to Lima and it was dull .",
    "Erin went to Tokyo and it was awful . Dave stayed home .",
]


@Language.component("every_third_token_starts_a_sentence")
def every_third_token_starts_a_sentence(doc):
    """Stands in for a parser or senter: sentence boundaries, set after `elmo`."""
    for token in doc:
        token.is_sent_start = token.i % 3 == 0
    return doc


def trained(bilm_dir, before, between, listener="textcat_multilabel", steps=4):
    nlp = spacy.blank("en")
    for name in before:
        nlp.add_pipe(name)
    nlp.add_pipe("elmo")
    for name in between:
        nlp.add_pipe(name)
    if listener == "textcat_multilabel":
        nlp.add_pipe("textcat_multilabel", config=copy.deepcopy(TEXTCAT))
    else:
        nlp.add_pipe("ner", config={"model": copy.deepcopy(NER_ELMO)})
    examples = examples_of(nlp, make_docs(nlp, 12))
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer)
    return nlp


def tok2vec_outputs(nlp, component, texts):
    """What `component`'s tok2vec gives for the docs as they reach it."""
    names = nlp.pipe_names[: nlp.pipe_names.index(component)]
    with nlp.select_pipes(enable=names):
        docs = list(nlp.pipe(texts))
    return nlp.get_pipe(component).model.get_ref("tok2vec").predict(docs)


def outputs(nlp, component, texts):
    vectors = tok2vec_outputs(nlp, component, texts)
    docs = list(nlp.pipe(texts))
    predicted = (
        [doc.cats for doc in docs]
        if component.startswith("textcat")
        else [[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs]
    )
    return vectors, predicted


def assert_same(before, after):
    for a, b in zip(before[0], after[0]):
        assert numpy.abs(a - b).max() <= 1e-5
    if isinstance(before[1][0], dict):
        for a, b in zip(before[1], after[1]):
            assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-5 for k in a)
    else:
        assert before[1] == after[1]


@pytest.mark.parametrize(
    "before,between,listener",
    [
        ([], ["sentencizer"], "textcat_multilabel"),
        ([], ["every_third_token_starts_a_sentence"], "ner"),
        (["sentencizer"], [], "textcat_multilabel"),
        (["sentencizer"], ["every_third_token_starts_a_sentence"], "textcat_multilabel"),
    ],
)
def test_replaced_listener_predicts_the_same(bilm_dir, tmp_path, before, between, listener):
    nlp = trained(bilm_dir, before, between, listener)
    want = outputs(nlp, listener, TEXTS)
    nlp.replace_listeners("elmo", listener, ["model.tok2vec.elmo"])
    assert nlp.get_pipe("elmo").listeners == []
    assert_same(want, outputs(nlp, listener, TEXTS))
    nlp.to_disk(tmp_path / "replaced")
    assert_same(want, outputs(spacy.load(tmp_path / "replaced"), listener, TEXTS))


def test_without_elmo_the_copy_reads_the_doc_as_elmo_read_it_in_training(bilm_dir):
    nlp = trained(bilm_dir, [], ["sentencizer"])
    want = outputs(nlp, "textcat_multilabel", TEXTS)
    nlp.replace_listeners("elmo", "textcat_multilabel", ["model.tok2vec.elmo"])
    nlp.remove_pipe("elmo")
    assert nlp.pipe_names == ["sentencizer", "textcat_multilabel"]
    assert_same(want, outputs(nlp, "textcat_multilabel", TEXTS))


TAGGER = {"@architectures": "spacy.Tagger.v2", "tok2vec": TOK2VEC}


def test_several_components_each_with_its_own_listener_train_save_and_load(bilm_dir, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.add_pipe("tagger", config={"model": copy.deepcopy(TAGGER)})
    nlp.add_pipe("senter", config={"model": copy.deepcopy(TAGGER)})
    nlp.add_pipe("textcat_multilabel", config=copy.deepcopy(TEXTCAT))
    nlp.add_pipe("ner", config={"model": copy.deepcopy(NER_ELMO)})
    examples = []
    for doc in make_docs(nlp, 12):
        for token in doc:
            token.tag_ = "NNP" if token.i in (0, 3) else "X"
            token.is_sent_start = token.i == 0
        examples.append(Example(nlp.make_doc(doc.text), doc))
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    optimizer = nlp.initialize(lambda: examples)
    assert sorted(nlp.get_pipe("elmo").listening_components) == ["ner", "senter", "tagger", "textcat_multilabel"]
    for _ in range(3):
        losses = nlp.update(examples, sgd=optimizer)
    assert all(losses[name] > 0 for name in ("tagger", "senter", "textcat_multilabel", "ner"))

    def predict(pipeline):
        docs = list(pipeline.pipe(TEXTS))
        return [
            ([t.tag_ for t in d], [t.is_sent_start for t in d], d.cats, [(e.start, e.end, e.label_) for e in d.ents])
            for d in docs
        ]

    want = predict(nlp)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert sorted(loaded.get_pipe("elmo").listening_components) == ["ner", "senter", "tagger", "textcat_multilabel"]
    got = predict(loaded)
    for (tags, starts, cats, ents), (tags2, starts2, cats2, ents2) in zip(want, got):
        assert (tags, starts, ents) == (tags2, starts2, ents2)
        assert all(abs(cats[k] - cats2[k]) <= 1e-5 for k in cats)


def copied_bilms(nlp, component):
    """The biLMs inside `component`'s model (its own copies after nlp.replace_listeners)."""
    return [get_bilm(node) for node in nlp.get_pipe(component).model.walk() if node.name == "elmo-bilm"]


@pytest.mark.parametrize("frozen", [True, False])
def test_the_copy_of_a_frozen_bilm_stays_frozen_in_training_also_after_loading(bilm_dir, tmp_path, frozen):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"frozen": frozen})
    nlp.add_pipe("ner", config={"model": copy.deepcopy(NER_ELMO)})
    examples = examples_of(nlp, make_docs(nlp, 12))
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    nlp.initialize(lambda: examples)
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])
    section = nlp.config["components"]["ner"]["model"]["tok2vec"]["elmo"]["bilm"]
    assert section["@architectures"] == "spacy-elmo.BiLM.v2" and section["frozen"] is frozen
    nlp.to_disk(tmp_path / "replaced")
    for pipeline in (nlp, spacy.load(tmp_path / "replaced")):
        (bilm,) = copied_bilms(pipeline, "ner")
        before = {name: value.clone() for name, value in bilm.state_dict().items()}
        optimizer = pipeline.resume_training()
        for _ in range(2):
            losses = pipeline.update(examples, sgd=optimizer, exclude=["elmo"])
        assert losses["ner"] > 0
        changed = [name for name, value in bilm.state_dict().items() if not torch.equal(value, before[name])]
        # frozen: not one weight of the copy moves; fine-tuned: every trained part of it does
        assert changed == [] if frozen else len(changed) > 10
