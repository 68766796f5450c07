"""The word-level entry (`BiLM.encode_words`): the same layers as `forward`,
and a token's layers bit-identical whatever else is computed with it."""

import json
import subprocess
import sys

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids
from spacy_elmo.bilm.char_ids import distinct_words, words_with_boundaries
from spacy_elmo.bilm.packing import SentencePacking, TimeMajor, reversed_steps
from spacy_elmo.errors import ElmoError

from ..numeric import assert_close_to_scale, torch_threads

SMALL = dict(
    char_embedding_dim=8,
    filters=[(1, 8), (2, 8), (3, 16), (5, 16)],
    n_highway=1,
    lstm_dim=32,
    projection_dim=12,
    n_layers=2,
)


def fixture_sentences(fixture_dir) -> list:
    sentences = json.loads((fixture_dir / "sentences.json").read_text())
    return [s.split() for batch in sentences for s in batch]


def scaled_bilm(**changes) -> BiLM:
    """Random weights at a realistic scale: gates that saturate, clips that bite."""
    torch.manual_seed(0)
    model = BiLM(BiLMOptions(**{**SMALL, **changes})).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
    return model


SHIPPED = "elmo-en-small"  # the shipped biLM, by name


@pytest.fixture(params=["fixture", "shipped", "small", "near-zero"])
def model(request, fixture_paths):
    if request.param == "fixture":
        return BiLM.from_allennlp(*fixture_paths).eval()
    if request.param == "shipped":
        return BiLM.from_allennlp(SHIPPED).eval()
    if request.param == "small":
        return scaled_bilm()
    return scaled_bilm(filters=[(1, 4), (2, 4)], n_highway=0, lstm_dim=8, projection_dim=8)


def test_words_give_the_layers_forward_gives(model, fixture_dir):
    sentences = fixture_sentences(fixture_dir)[:12] + [[], ["<S>", "x" * 60, "</S>"], ["é" * 30, ""], ["a"]]
    with torch.inference_mode():
        output = model(batch_to_ids(sentences))
        model.clear_token_cache()
        words = model.encode_words(sentences)
    assert torch.equal(words, output.layers[:, output.mask])


def test_a_tokens_layers_are_bit_identical_whatever_else_is_computed(model, fixture_dir):
    """Alone at one thread, or in any batch, any order, from a warm cache, at 1 to 3 threads."""
    sentences = fixture_sentences(fixture_dir)
    target = sentences[4]
    n = len(target)
    others = sentences[:4] + sentences[5:] + [["x"], [], ["a", "b", "c"]] * 5
    with torch.inference_mode(), torch_threads(1):
        model.clear_token_cache()
        alone = model.encode_words([target])
    for threads in (1, 2, 3):
        with torch.inference_mode(), torch_threads(threads):
            for position in (0, 7, len(others)):
                model.clear_token_cache()
                batch = others[:position] + [target] + others[position:]
                start = sum(len(s) for s in batch[:position])
                assert torch.equal(model.encode_words(batch)[:, start : start + n], alone), (threads, position)
            # A warm cache: the target's words were encoded with other words, in other calls.
            model.encode_words([target[::-1], ["x"]])
            assert torch.equal(model.encode_words([target]), alone), threads
            # forward over character ids, in any row order, gives them too.
            ids = batch_to_ids(others[:9] + [target])
            assert torch.equal(model(ids).layers[:, 9, :n], alone), threads


@pytest.mark.parametrize("name", ["shipped", "small"])
def test_every_sentence_gets_its_layers_alone_in_shuffled_batches_at_any_thread_count(name, fixture_dir):
    """The README's promise on sentences of every length: each sentence's layers in
    shuffled batches of 3 to 16, with a cold or a warm cache, at 1 or 2 threads, are its
    layers computed alone at one thread, bit for bit. (Before the products were made
    independent of the row and thread counts, products.py, 1 in 30 differed at 2 threads
    on an AVX2 CPU.)"""
    model = BiLM.from_allennlp(SHIPPED).eval() if name == "shipped" else scaled_bilm()
    rng = numpy.random.default_rng(0)
    words = [w for s in fixture_sentences(fixture_dir) for w in s]
    sentences = [[str(w) for w in rng.choice(words, size=n)] for n in rng.integers(1, 40, size=30)]
    with torch.inference_mode(), torch_threads(1):
        alone = [model.encode_words([s]) for s in sentences]
    for threads in (1, 2):
        for size in (3, 7, 16):
            order = rng.permutation(len(sentences))
            with torch.inference_mode(), torch_threads(threads):
                for first in range(0, len(order), size):
                    batch = order[first : first + size]
                    if rng.random() < 0.5:
                        model.clear_token_cache()
                    layers = model.encode_words([sentences[i] for i in batch])
                    ends = numpy.cumsum([len(sentences[i]) for i in batch])
                    for i, end in zip(batch, ends):
                        start = end - len(sentences[i])
                        assert torch.equal(layers[:, start:end], alone[i]), (threads, size, i)


def test_the_per_gate_and_wide_products_give_the_same_bits(model, fixture_dir, monkeypatch):
    """The recurrence's two forms of the gates' product (`BiLSTMStack.inference_weights`): one
    product per gate from the weights in place (large LSTMs on a CPU) and one wide product per
    direction from a reordered copy; each gate's input halved or its weights, the same bits,
    at 1 and 2 threads. Not for gates under 16 cells ("near-zero", 8): MKL multiplies by
    an 8-column matrix with another kernel than by a 32-column one, which rounds otherwise on
    some CPUs (an AVX2 EPYC); only the wide form runs such LSTMs, and there the two agree
    to float32 rounding carried through the recurrence."""
    from spacy_elmo.bilm.recurrence import weight_forms

    sentences = fixture_sentences(fixture_dir) + [["x"], [], ["a", "b", "c"] * 9]
    for threads in (1, 2):
        layers = {}
        for form, min_cells in (("per gate", 1), ("wide", 10**9)):
            monkeypatch.setattr(weight_forms, "PER_GATE_MIN_CELLS", min_cells)
            with torch.inference_mode(), torch_threads(threads):
                assert model.lstm.inference_weights(0)[1].shape[0] == (8 if form == "per gate" else 2)
                model.clear_token_cache()
                layers[form] = model.encode_words(sentences)
        if model.lstm.W_proj[0].shape[1] >= 16:
            assert torch.equal(layers["per gate"], layers["wide"]), threads
        else:
            assert_close_to_scale(layers["per gate"], layers["wide"], rtol=1e-5, what=f"{threads} threads")


FIRST_BATCH = """
import json, sys
import torch
torch.set_num_threads(2)
from spacy_elmo.bilm import BiLM
model = BiLM.from_allennlp(sys.argv[1] + "/options.json", sys.argv[1] + "/lm_weights.hdf5").eval()
sentences = [s.split() for batch in json.loads(open(sys.argv[1] + "/sentences.json").read()) for s in batch]
with torch.inference_mode():
    first = model.encode_words(sentences)
    model.clear_token_cache()
    print(torch.equal(first, model.encode_words(sentences)))
"""


def test_a_fresh_process_computes_its_first_batch_as_the_next(fixture_dir):
    """oneMKL chooses its tanh kernel at the first call, and where that call runs on several
    threads at once one of them can run a low-accuracy kernel (pytorch/pytorch#188792): with 2
    threads, some fresh processes (2 in 15 in one count) gave their first batch other values
    before the biLM had the kernel chosen on one thread (`lstm.resolve_tanh_kernel`). Eight fresh
    processes; without that call the test fails in some runs only (one in four here), as a race
    does."""
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_BATCH, str(fixture_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [out.strip() for out, _ in outputs] == ["True"] * 8, [err[-2000:] for _, err in outputs]


def test_the_packing_of_words_is_the_packing_of_forward():
    lengths = numpy.array([3, 0, 5, 3, 1])
    index = numpy.arange(2, 2 + lengths.sum())
    packing = SentencePacking.of(index, lengths)
    steps = torch.from_numpy(lengths + 2)
    expected = TimeMajor.of_lengths(steps, int(steps.max()))
    assert packing.batch_sizes == expected.batch_sizes
    # The word at every (row, step), padded as forward lays it out.
    padded = torch.ones(len(lengths), int(steps.max()), dtype=torch.long)
    padded[:, 0] = 0
    mask = torch.arange(int(lengths.max()))[None, :] < torch.from_numpy(lengths)[:, None]
    padded[:, 1 : int(lengths.max()) + 1][mask] = torch.from_numpy(index)
    backward = torch.gather(padded, 1, reversed_steps(steps, int(steps.max())))
    assert torch.equal(torch.from_numpy(packing.inputs[0]), expected.pack(padded))
    assert torch.equal(torch.from_numpy(packing.inputs[1]), expected.pack(backward))
    # Every token's output: step k + 1 forwards, step length - k backwards (with the boundaries).
    inputs = torch.from_numpy(packing.inputs)
    assert torch.equal(inputs[0][torch.from_numpy(packing.outputs[0])], torch.from_numpy(index))
    assert torch.equal(inputs[1][torch.from_numpy(packing.outputs[1])], torch.from_numpy(index))


def test_distinct_words_index_every_token():
    words, index, lengths = distinct_words([["a", "b", "a"], [], ["<S>", "c", "b"]])
    assert words == ["<S>", "</S>", "a", "b", "c"]
    assert index.tolist() == [2, 3, 2, 0, 4, 3] and lengths.tolist() == [3, 0, 3]


def test_words_with_boundaries_puts_the_boundaries_first():
    words, positions = words_with_boundaries(["b", "a"])
    assert words == ["<S>", "</S>", "b", "a"] and positions.tolist() == [2, 3]
    words, positions = words_with_boundaries(["x", "</S>", "<S>", "y"])  # boundary texts are the boundaries
    assert words == ["<S>", "</S>", "x", "y"] and positions.tolist() == [2, 1, 0, 3]


def test_indexed_words_in_any_order_give_the_layers_of_encode_words(model):
    sentences = [["the", "cat", "the", "<S>"], [], ["</S>", "dog", "cat"], ["a"]]
    with torch.inference_mode():
        want = model.encode_words(sentences)
        # The distinct words in another order, as the elmo component finds them (sorted ORTH ids).
        words, index, lengths = distinct_words(sentences)
        order = numpy.array([0, 1, *range(len(words) - 1, 1, -1)])  # words[order[k]] is new word k
        new_of_old = numpy.argsort(order)
        model.clear_token_cache()
        got = model.encode_indexed([words[i] for i in order], new_of_old[index], lengths)
    assert torch.equal(got, want)


@pytest.mark.parametrize(
    "words,index,lengths",
    [
        (["a", "<S>", "</S>"], [0], [1]),  # boundaries not first
        (["<S>", "</S>", "a"], [2, 3], [2]),  # an index past the words
        (["<S>", "</S>", "a"], [2, -1], [2]),
        (["<S>", "</S>", "a"], [2, 2], [1]),  # lengths not covering the indices
        (["<S>", "</S>", "a"], [2, 2], [3, -1]),
        (["<S>", "</S>", "a", "a"], [2, 3], [2]),  # a word twice (the token cache keys them by the word)
    ],
)
def test_bad_indexed_words_are_reported(words, index, lengths):
    with pytest.raises(ElmoError, match="E105"):
        scaled_bilm().encode_indexed(words, numpy.array(index), numpy.array(lengths))


def test_words_with_gradients_give_the_layers_and_gradients_of_forward(fixture_paths, fixture_dir):
    # Outside no_grad and inference_mode (torch's default), as forward runs in training.
    sentences = fixture_sentences(fixture_dir)[:6] + [[]]
    model = BiLM.from_allennlp(*fixture_paths)
    output = model(batch_to_ids(sentences))
    want = output.layers[:, output.mask]
    want.pow(2).sum().backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    got = model.encode_words(sentences)
    got.pow(2).sum().backward()
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6 * float(want.detach().abs().max()))
    for p, want_grad in zip(model.parameters(), want_grads):
        torch.testing.assert_close(p.grad, want_grad, rtol=1e-5, atol=1e-6 * float(want_grad.abs().max()) + 1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("part", ["the biLM", "its LSTMs"])
def test_a_bilm_in_another_dtype_is_reported(dtype, part):
    model = scaled_bilm()
    (model if part == "the biLM" else model.lstm).to(dtype)
    words, index, lengths = distinct_words([["a", "b"]])
    calls = [
        lambda: model(batch_to_ids([["a", "b"]])),
        lambda: model.encode_words([["a", "b"]]),
        lambda: model.top_layer_indexed(words, index, lengths),
    ]
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            for call in calls:
                with pytest.raises(ElmoError, match=r"E107.*\.float\(\)"):
                    call()


@pytest.mark.parametrize("bad", [["a string"], [["a", 1]], [["a", ["b"]]], "abc"])
def test_bad_sentences_are_reported(bad):
    with pytest.raises(ElmoError, match="E103"):
        scaled_bilm().encode_words(bad if not isinstance(bad, str) else [bad])


def test_the_word_cache_is_bounded_and_keeps_the_recent_words():
    model = scaled_bilm()
    model.token_cache.max_size = 8
    with torch.inference_mode():
        first = model.encode_words([["a", "b", "c"]])
        model.encode_words([["a", "d"], ["e"]])  # a used again; 7 of 8 taken
        model.encode_words([["f", "g"]])  # full: b, the least recently used, goes
        assert len(model.token_cache) == 8
        cached = set(model.token_cache._slots)
        assert "b" not in cached and {"a", "c", "d", "e", "f", "g"} <= cached
        assert torch.equal(model.encode_words([["a", "b", "c"]]), first)
        big = [[f"w{i}" for i in range(20)]]  # more distinct words than the cache holds
        assert torch.equal(model.encode_words(big), model(batch_to_ids(big)).layers[:, 0])
        assert len(model.token_cache) <= 8


def test_missing_words_are_encoded_in_groups_of_similar_length(model, request, monkeypatch):
    if request.node.callspec.params["model"] == "small":
        pytest.skip("MKL's products of this shape depend on the row count")
    short = [f"w{i}" for i in range(300)]
    words = ["<S>", "</S>", *short, "https://example.com/" + "x" * 60, *[f"word{i}" * 2 for i in range(100)]]
    calls = []
    pooled = model.token_encoder.pooled

    def recorded(char_ids, filters, longest=None):
        calls.append(longest)
        return pooled(char_ids, filters, longest)

    monkeypatch.setattr(model.token_encoder, "pooled", recorded)
    with torch.inference_mode():
        model.clear_token_cache()
        got = model.encode_indexed(words, numpy.arange(len(words)), numpy.array([len(words)]))
    # The short words' windows stop at their own length, not at the URL's.
    assert len(calls) > 1 and min(calls) <= 6 and max(calls) == 50
    with torch.inference_mode():
        model.clear_token_cache()
        for k in (2, 150, 302, 350):  # each word alone: the same layers, bit for bit
            alone = model.encode_words([[words[k]]])
            model.clear_token_cache()
            assert torch.equal(got[:1, k : k + 1], alone[:1])
