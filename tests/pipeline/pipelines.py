"""The pipelines the pipeline tests build, save, train and read layers from."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import spacy
import torch
from spacy.util import registry
from thinc.api import Model

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.models.bilm import set_bilm

from ..bilm.helpers import SMALL
from .util import examples_of, make_docs

CONFIGS = Path(__file__).parent.parent.parent / "configs"
BILM = "spacy-elmo.BiLM.v1"
# 14 tokens, no sentence boundaries: read as windows of window_size tokens.
TEXTS = ["One two three four five six seven eight nine ten eleven twelve thirteen .", "Short one ."]
NER_ELMO = {
    "@architectures": "spacy.TransitionBasedParser.v2",
    "state_type": "ner",
    "hidden_width": 32,
    "maxout_pieces": 2,
    "use_upper": True,
    "tok2vec": {
        "@architectures": "spacy-elmo.ElmoTok2Vec.v1",
        "elmo": {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "*"},
        "embed": {
            "@architectures": "spacy.MultiHashEmbed.v2",
            "width": 32,
            "attrs": ["NORM", "SHAPE"],
            "rows": [500, 100],
            "include_static_vectors": False,
        },
        "encode": {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": 32,
            "depth": 1,
            "window_size": 1,
            "maxout_pieces": 2,
        },
    },
}


AVERAGE_MIX = "test-spacy-elmo.average_mix.v1"


@registry.layers(AVERAGE_MIX)
def average_mix() -> Model:
    """The plain average of the layers: no parameters, no softmax."""

    def forward(model, X, is_train):
        n_layers = X.shape[0]
        return X.mean(axis=0), lambda dY: model.ops.xp.repeat(dY[None] / n_layers, n_layers, axis=0)

    return Model("test-average-mix", forward)


def pipeline_with(mix, bilm_dir, weights_file=None):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    ner = copy.deepcopy(NER_ELMO)
    ner["tok2vec"]["elmo"]["mix"] = mix
    nlp.add_pipe("ner", config={"model": ner})
    examples = examples_of(nlp, make_docs(nlp, 12))
    nlp.config["initialize"]["components"]["elmo"] = {
        "options_file": str(bilm_dir),
        "weights_file": weights_file and str(weights_file),
    }
    return nlp, examples


def elmo_pipeline(bilm_dir, *, with_ner=True, **elmo_config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config)
    if with_ner:
        nlp.add_pipe("ner", config={"model": NER_ELMO})
    examples = examples_of(nlp, make_docs(nlp, 20))
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    nlp.initialize(lambda: examples)
    return nlp, examples


def tiny_pipeline(token_cache_size: int):
    """A blank English pipeline with an `elmo` component around a tiny random biLM."""
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo")
    torch.manual_seed(0)
    set_bilm(elmo.model, BiLM(BiLMOptions(**SMALL), token_cache_size=token_cache_size).eval())
    return nlp


def save(tmp_path, bilm_dir, **model):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, model={"@architectures": BILM, **model})
    nlp.to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline"


def override(**model):
    return {"components": {"elmo": {"model": model}}}


def layers(nlp, texts=TEXTS):
    return [doc._.elmo.layers for doc in nlp.pipe(texts)]


def spacy_train(config, output, corpus_dir, bilm_dir, steps=40, extra=()):
    cmd = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        str(CONFIGS / config),
        "--output",
        str(output),
        "--paths.train",
        str(corpus_dir / "train.spacy"),
        "--paths.dev",
        str(corpus_dir / "dev.spacy"),
        "--paths.elmo",
        str(bilm_dir),
        "--training.max_steps",
        str(steps),
        "--training.eval_frequency",
        "20",
        "--nlp.batch_size",
        "16",
        # Small and quick: the tiny fixture biLM and narrow encoders.
        "--training.batcher.size.start",
        "200",
        "--training.batcher.size.stop",
        "200",
        *extra,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return json.loads((output / "model-last" / "meta.json").read_text())
