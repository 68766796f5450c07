"""The runtime settings of our models (those that do not change the weights:
the biLM's, a listener's mix and dropout) live in the config alone: an
override at `spacy.load`, or an edit of the saved config.cfg, is what the
model does, whatever the saved model holds."""

import copy
import warnings

import numpy
import pytest
import spacy
import srsly
import torch
from thinc.api import Config, fix_random_seed

from spacy_elmo.bilm.precision import cpu_has_bf16
from spacy_elmo.models.bilm import _batches, get_bilm
from spacy_elmo.models.listener import ELMO_DROPOUT_NAME

from ..numeric import assert_close_to_scale
from .pipelines import BILM, NER_ELMO, elmo_pipeline, layers, override, save
from .util import examples_of, make_docs


def differ(a, b):
    return any(x.shape != y.shape or abs(x - y).max() > 1e-4 for x, y in zip(a, b))


def bilm_calls(nlp):
    """Record, for every call of the torch biLM, whether bfloat16 autocast is on."""
    calls = []
    bilm = get_bilm(nlp.get_pipe("elmo").model)
    bilm.register_forward_pre_hook(lambda module, args: calls.append(torch.is_autocast_enabled("cpu")))
    encode_indexed = bilm.encode_indexed  # the entry at prediction

    def recorded(*args, **kwargs):
        calls.append(torch.is_autocast_enabled("cpu"))
        return encode_indexed(*args, **kwargs)

    bilm.encode_indexed = recorded
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
    fresh, _ = elmo_pipeline(
        bilm_dir, with_ner=False, model={"@architectures": BILM, "max_batch_tokens": 4096, "window_size": 4}
    )
    want = layers(fresh)
    assert differ(want, layers(saved))  # windows of 4 read a 14-token doc otherwise than one of 128
    for got, expected in zip(layers(loaded), want):
        assert_close_to_scale(got, expected)


def test_a_save_with_the_settings_as_separate_attrs_loads_with_the_configs(tmp_path, bilm_dir):
    # Pipelines saved before the settings were one attr hold each as an attr of its own.
    path = save(tmp_path, bilm_dir, max_batch_tokens=4096, window_size=128)
    msg = srsly.msgpack_loads((path / "elmo" / "model").read_bytes())
    assert list(msg["attrs"][0]) == ["settings"]  # the biLM's node: the settings, saved for the record
    old = {"max_batch_tokens": 4096, "window_size": 128, "precision": "fp32", "sentences": "doc"}
    msg["attrs"][0] = {name: srsly.msgpack_dumps(value) for name, value in old.items()}
    (path / "elmo" / "model").write_bytes(srsly.msgpack_dumps(msg))
    loaded = spacy.load(path, config=override(window_size=4))
    fresh, _ = elmo_pipeline(
        bilm_dir, with_ner=False, model={"@architectures": BILM, "max_batch_tokens": 4096, "window_size": 4}
    )
    for got, expected in zip(layers(loaded), layers(fresh)):
        assert_close_to_scale(got, expected)


def test_max_batch_tokens_at_load_is_the_batch_budget(tmp_path, bilm_dir):
    path = save(tmp_path, bilm_dir, max_batch_tokens=4096, window_size=4)
    saved, loaded = spacy.load(path), spacy.load(path, config=override(max_batch_tokens=8))
    saved_calls, loaded_calls = bilm_calls(saved), bilm_calls(loaded)
    want = layers(saved)
    # 4 windows of 4 tokens and one of 3: one batch under 4096 tokens, three under 8.
    assert len(saved_calls) == 1
    got = layers(loaded)
    assert len(loaded_calls) == 3
    for a, b in zip(got, want):
        assert_close_to_scale(a, b)


def test_the_batch_budget_counts_tokens_not_padding():
    # Length-sorted segments (doc, start, end, keep_start, keep_end) of 4, 1, 1, 1 and 1
    # tokens: 8 tokens in all, 20 with each padded to the longest (the packed biLM pads nothing).
    segments = [(0, 0, 4, 0, 4)] + [(d, 0, 1, 0, 1) for d in range(1, 5)]
    assert [len(batch) for batch in _batches(segments, 8)] == [5]
    assert [len(batch) for batch in _batches(segments, 6)] == [3, 2]
    assert [len(batch) for batch in _batches(segments, 3)] == [1, 3, 1]  # a longer segment alone


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


def test_cuda_graphs_at_load_turn_them_on_and_false_leaves_a_choice_made_in_python(tmp_path, bilm_dir):
    path = save(tmp_path, bilm_dir)
    loaded = spacy.load(path, config=override(cuda_graphs=True))
    expected = layers(spacy.load(path))
    got = layers(loaded)  # on a CPU the graphs change nothing
    assert all(numpy.array_equal(a, b) for a, b in zip(got, expected))
    bilm = get_bilm(loaded.get_pipe("elmo").model)
    assert bilm.lstm.graphs is not None
    bilm.use_cuda_graphs(True, max_graphs=4)
    kept = bilm.lstm.graphs
    layers(loaded)
    assert bilm.lstm.graphs is kept  # not made again on every call
    by_default = spacy.load(path)
    default_bilm = get_bilm(by_default.get_pipe("elmo").model)
    layers(by_default)
    assert default_bilm.lstm.graphs is None
    default_bilm.use_cuda_graphs(True, max_graphs=4)
    layers(by_default)
    assert default_bilm.lstm.graphs is not None and default_bilm.lstm.graphs.max_graphs == 4


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


# The listener's mix and dropout: settings of the downstream component's model.
MIX = "spacy-elmo.ScalarMix.v1"


@pytest.fixture(scope="module")
def saved_ner(tmp_path_factory, fixture_paths):
    """A pipeline whose ner listens with an explicit mix (all settings off, its
    layer scalars moved off uniform) and an ELMo dropout of 0.1."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    ner = copy.deepcopy(NER_ELMO)
    ner["tok2vec"]["elmo"].update(mix={"@layers": MIX}, dropout=0.1)
    nlp.add_pipe("ner", config={"model": ner})
    examples = examples_of(nlp, make_docs(nlp, 8))
    nlp.config["initialize"]["components"]["elmo"] = {
        "options_file": str(fixture_paths[0].parent),
        "weights_file": None,
    }
    nlp.initialize(lambda: examples)
    mix = nlp.get_pipe("elmo").listeners[0].mix
    mix.set_param("s", numpy.asarray([1.0, 0.0, -1.0], dtype="float32"))
    mix.set_param("gamma", numpy.asarray([2.0], dtype="float32"))
    path = tmp_path_factory.mktemp("ner") / "pipeline"
    nlp.to_disk(path)
    return path


def load_listener(path, mix=None, **listener):
    elmo = {**listener, **({"mix": mix} if mix else {})}
    nlp = spacy.load(path, config={"components": {"ner": {"model": {"tok2vec": {"elmo": elmo}}}}})
    return nlp, nlp.get_pipe("elmo").listeners[0]


def mixed(listener, doc):
    return listener.predict([doc])[0]


@pytest.mark.parametrize(
    "setting,expected",
    [
        ({"layer": 0}, lambda H: H[0]),
        ({"average": True}, lambda H: H.mean(axis=0)),
        ({"layer_norm": True}, lambda H: numpy.tensordot(softmax([1.0, 0.0, -1.0]), normalised(H), axes=1)),
    ],
    ids=["layer", "average", "layer_norm"],
)
def test_a_mix_setting_at_load_is_the_mix_applied(saved_ner, setting, expected):
    nlp, listener = load_listener(saved_ner, mix=setting)
    doc = nlp("Bob went to Paris .")
    H = doc._.elmo.layers
    assert differ([mixed(load_listener(saved_ner)[1], doc)], [2.0 * expected(H)])
    assert_close_to_scale(mixed(listener, doc), 2.0 * expected(H), rtol=1e-5)


def test_layer_dropout_at_load_drops_layers_in_training(saved_ner):
    _, listener = load_listener(saved_ner, mix={"layer_dropout": 0.9})
    _, unchanged = load_listener(saved_ner)
    H = numpy.random.default_rng(0).normal(size=(3, 5, 32)).astype("float32")
    full = unchanged.mix.predict(H)
    fix_random_seed(0)
    assert_close_to_scale(unchanged.mix.begin_update(H)[0], full)  # the saved rate, 0: every layer in training
    dropped = sum(differ([listener.mix.begin_update(H)[0]], [full]) for _ in range(10))
    assert dropped >= 8  # each of the two layers not kept for sure stays with probability 0.1


def test_l2_to_uniform_at_load_pulls_the_layer_scalars_to_uniform(saved_ner):
    _, listener = load_listener(saved_ner, mix={"l2_to_uniform": 10.0})
    mix = listener.mix
    H = numpy.ones((3, 4, 32), dtype="float32")
    _, backprop = mix.begin_update(H)
    backprop(numpy.zeros((4, 32), dtype="float32"))  # no task gradient: the penalty's alone
    assert_close_to_scale(mix.get_grad("s"), 2.0 * 10.0 * numpy.asarray([1.0, 0.0, -1.0]), rtol=1e-5)


def test_the_listeners_dropout_at_load_is_the_rate_in_training(saved_ner):
    _, listener = load_listener(saved_ner, dropout=0.5)
    dropout = next(node for node in listener.walk() if node.name == ELMO_DROPOUT_NAME)
    fix_random_seed(0)
    Y, _ = dropout.begin_update(numpy.ones((200, 32), dtype="float32"))
    assert 0.45 < float((Y == 0).mean()) < 0.55  # the saved model's rate is 0.1
    assert numpy.allclose(Y[Y != 0], 2.0)  # kept values scaled by 1 / (1 - 0.5)


def softmax(s):
    e = numpy.exp(numpy.asarray(s) - max(s))
    return (e / e.sum()).astype("float32")


def normalised(H):
    mean = H.mean(axis=(1, 2), keepdims=True)
    return (H - mean) / numpy.sqrt(((H - mean) ** 2).mean(axis=(1, 2), keepdims=True) + 1e-12)
