"""`spacy train` on the shipped configs, and saved pipelines in fresh processes."""

import json
import shutil
import subprocess
import sys

import numpy
import pytest
import spacy

from spacy_elmo.layer_mixes import listener_mixes, plot_mixes

from .pipelines import elmo_pipeline, spacy_train


def uniform_distance(mix):
    weights = numpy.asarray(mix["weights"])
    return float(numpy.abs(weights - 1.0 / len(weights)).max())


@pytest.mark.slow
@pytest.mark.parametrize(
    "config,scores,mix_names",
    [
        ("ner_elmo.cfg", ["ents_f"], {"ner"}),
        ("textcat_elmo.cfg", ["cats_score"], {"textcat"}),
        ("joint_elmo.cfg", ["ents_f", "cats_score"], {"ner", "textcat"}),
        ("ner_elmo_output.cfg", ["ents_f"], {"ner#elmo", "ner#output_elmo"}),  # ELMo at the encoder's output too
        ("textcat_elmo_output.cfg", ["cats_score"], {"textcat#elmo", "textcat#output_elmo"}),
    ],
)
def test_spacy_train_cli(tmp_path, corpus_dir, bilm_dir, config, scores, mix_names):
    meta = spacy_train(config, tmp_path / "out", corpus_dir, bilm_dir)
    for score in scores:
        assert meta["performance"][score] is not None
    nlp = spacy.load(tmp_path / "out" / "model-last")
    mixes = listener_mixes(nlp)
    assert set(mixes) == mix_names
    for mix in mixes.values():
        assert uniform_distance(mix) > 1e-3  # each mix moved away from the uniform start
    if config == "joint_elmo.cfg":
        ner, textcat = mixes["ner"]["weights"], mixes["textcat"]["weights"]
        assert numpy.abs(numpy.asarray(ner) - numpy.asarray(textcat)).max() > 1e-3
        plot_mixes(mixes, tmp_path / "mix.png")
        assert (tmp_path / "mix.png").stat().st_size > 1000


LOAD_AND_PREDICT = """
import json, sys, spacy
nlp = spacy.load(sys.argv[1])
docs = list(nlp.pipe(json.loads(sys.argv[2])))
print(json.dumps([[(e.start, e.end, e.label_) for e in d.ents] for d in docs]))
print(json.dumps([d._.elmo.layers.tolist() for d in docs]))
"""


def predictions(nlp, texts):
    docs = list(nlp.pipe(texts))
    return [[(e.start, e.end, e.label_) for e in d.ents] for d in docs], [d._.elmo.layers for d in docs]


@pytest.mark.slow
def test_overfit_save_and_load_in_a_fresh_process(tmp_path, bilm_dir):
    nlp, examples = elmo_pipeline(bilm_dir)
    optimizer = nlp.create_optimizer()
    for _ in range(60):
        losses = nlp.update(examples, sgd=optimizer)
    assert losses["ner"] < 1.0
    texts = [eg.reference.text for eg in examples[:6]] + ["Frank went to Lima and it was dull ."]
    ents, layers = predictions(nlp, texts)
    assert ents[0] == [(e.start, e.end, e.label_) for e in examples[0].reference.ents]
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(bilm_dir)  # the saved pipeline must not need the original files
    result = subprocess.run(
        [sys.executable, "-c", LOAD_AND_PREDICT, str(tmp_path / "pipeline"), json.dumps(texts)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded_ents, loaded_layers = (json.loads(line) for line in result.stdout.strip().splitlines()[-2:])
    assert [[tuple(e) for e in doc] for doc in loaded_ents] == ents
    for a, b in zip(layers, loaded_layers):  # same weights; float sums may differ in the last bit
        assert numpy.abs(a - numpy.asarray(b, dtype=a.dtype)).max() <= 1e-5


@pytest.mark.slow
def test_sourced_ner_with_replaced_listeners_predicts_the_same(tmp_path, bilm_dir):
    nlp, examples = elmo_pipeline(bilm_dir)
    optimizer = nlp.create_optimizer()
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    texts = [eg.reference.text for eg in examples[:5]]
    before = predictions(nlp, texts)[0]
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])
    assert nlp.get_pipe("elmo").listeners == []
    target = spacy.blank("en")
    target.add_pipe("ner", source=nlp)
    assert target.pipe_names == ["ner"]
    assert predictions_ents(target, texts) == before
    target.to_disk(tmp_path / "sourced")
    reloaded = spacy.load(tmp_path / "sourced")
    assert predictions_ents(reloaded, texts) == before


def predictions_ents(nlp, texts):
    return [[(e.start, e.end, e.label_) for e in d.ents] for d in nlp.pipe(texts)]
