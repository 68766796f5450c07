"""The biLM model's runtime settings (those that do not change its weights)
live in the config alone: an override at `spacy.load`, or an edit of the saved
config.cfg, is what the model does, whatever the saved model holds."""
import warnings

import pytest
import spacy
import torch
from thinc.api import Config

from spacy_elmo.bilm.precision import cpu_has_bf16
from spacy_elmo.models.bilm import get_bilm

from ..numeric import assert_close_to_scale
from .test_elmo_component import elmo_pipeline

BILM = "spacy-elmo.BiLM.v1"
# 14 tokens, no sentence boundaries: read as windows of window_size tokens.
TEXTS = ["One two three four five six seven eight nine ten eleven twelve thirteen .", "Short one ."]


def save(tmp_path, bilm_dir, **model):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, model={"@architectures": BILM, **model})
    nlp.to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline"


def override(**model):
    return {"components": {"elmo": {"model": model}}}


def layers(nlp, texts=TEXTS):
    return [doc._.elmo.layers for doc in nlp.pipe(texts)]


def differ(a, b):
    return any(x.shape != y.shape or abs(x - y).max() > 1e-4 for x, y in zip(a, b))


def bilm_calls(nlp):
    """Record, for every call of the torch biLM, whether bfloat16 autocast is on."""
    calls = []
    get_bilm(nlp.get_pipe("elmo").model).register_forward_pre_hook(
        lambda module, args: calls.append(torch.is_autocast_enabled("cpu"))
    )
    return calls


@pytest.mark.parametrize("how", ["override", "edited config.cfg"])
def test_window_size_at_load_is_the_window_read(tmp_path, bilm_dir, how):
    path = save(tmp_path, bilm_dir, max_batch_tokens=4096, window_size=128)
    saved = spacy.load(path)
    if how == "override":
        loaded = spacy.load(path, config=override(window_size=4))
    else:
        config = Config().from_disk(path / "config.cfg")
        config["components"]["elmo"]["model"]["window_size"] = 4
        config.to_disk(path / "config.cfg")
        loaded = spacy.load(path)
    assert loaded.config["components"]["elmo"]["model"]["window_size"] == 4
    fresh, _ = elmo_pipeline(bilm_dir, with_ner=False, model={"@architectures": BILM, "max_batch_tokens": 4096, "window_size": 4})
    want = layers(fresh)
    assert differ(want, layers(saved))  # windows of 4 read a 14-token doc otherwise than one of 128
    for got, expected in zip(layers(loaded), want):
        assert_close_to_scale(got, expected)


def test_max_batch_tokens_at_load_is_the_batch_budget(tmp_path, bilm_dir):
    path = save(tmp_path, bilm_dir, max_batch_tokens=4096, window_size=4)
    saved, loaded = spacy.load(path), spacy.load(path, config=override(max_batch_tokens=8))
    saved_calls, loaded_calls = bilm_calls(saved), bilm_calls(loaded)
    want = layers(saved)
    # 4 windows of 4 tokens and one of 3: one batch under 4096 padded tokens, three under 8.
    assert len(saved_calls) == 1
    got = layers(loaded)
    assert len(loaded_calls) == 3
    for a, b in zip(got, want):
        assert_close_to_scale(a, b)


def test_precision_at_load_is_the_arithmetic(tmp_path, bilm_dir):
    path = save(tmp_path, bilm_dir)
    loaded = spacy.load(path, config=override(precision="bf16"))
    calls = bilm_calls(loaded)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = layers(loaded)
    if cpu_has_bf16():
        assert calls and all(calls)  # bfloat16 autocast around every call of the biLM
        assert differ(got, layers(spacy.load(path)))
    else:  # bf16 asked for, float32 computed, with the warning that says so
        assert any('"bf16"' in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_sentences_at_load_is_what_the_model_reads(tmp_path, bilm_dir):
    path = save(tmp_path, bilm_dir)
    saved, loaded = spacy.load(path), spacy.load(path, config=override(sentences="upstream"))
    for nlp in (saved, loaded):
        nlp.add_pipe("sentencizer", first=True)
    texts = ["The cat sat . The dog ran ."]
    # "upstream" reads the sentences doc._.elmo records, which no doc has before elmo: one text.
    as_one_text = layers(elmo_pipeline(bilm_dir, with_ner=False)[0], texts)
    assert differ(as_one_text, layers(saved, texts))
    for got, expected in zip(layers(loaded, texts), as_one_text):
        assert_close_to_scale(got, expected)
