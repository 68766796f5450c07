"""The token cache serves a token's representation again only while the weights that computed it are the model's,
and only the representation of its own token, whichever threads call the biLM."""

import copy
import pickle
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids
from spacy_elmo.bilm.token_cache import TokenCache
from spacy_elmo.bilm.weights import load_weights

from .helpers import SMALL, small_bilm

IDS = batch_to_ids([["a", "b", "c"], ["a", "d"]])  # four words and the two boundaries


def count_encoded(model: BiLM) -> list:
    """Records how many tokens each call of the token encoder encodes (a call
    on a few rows pads them and calls the encoder again: counted once)."""
    calls: list = []
    depth = [0]

    def before(module, inputs):
        if depth[0] == 0:
            calls.append(inputs[0].shape[0])
        depth[0] += 1

    def after(module, inputs, output):
        depth[0] -= 1

    model.token_encoder.register_forward_pre_hook(before)
    model.token_encoder.register_forward_hook(after)
    return calls


def predict(model: BiLM, ids: torch.Tensor = IDS) -> torch.Tensor:
    with torch.no_grad():
        return model(ids).layers


def assert_fresh(model: BiLM, stale: torch.Tensor, ids: torch.Tensor = IDS) -> None:
    """`model` predicts what a copy of it with an empty cache predicts, and not `stale`."""
    copy = BiLM(model.options).eval()
    copy.load_state_dict(model.state_dict())
    got, expected = predict(model, ids), predict(copy, ids)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert (got - stale).abs().max() > 1e-3  # the weights did change: stale vectors would show


def uncached_copy(model: BiLM) -> BiLM:
    copied = BiLM(model.options, token_cache_size=0).eval()
    copied.load_state_dict(model.state_dict())
    return copied


def random_sentences(n: int, length: int, n_words: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(n_words)]
    return [rng.choices(words, k=length) for _ in range(n)]


def test_tokens_seen_before_come_from_the_cache():
    model = small_bilm()
    calls = count_encoded(model)
    first = predict(model)
    assert calls == [6] and len(model.token_cache) == 6
    again = predict(model)
    assert calls == [6]  # nothing changed: nothing encoded again
    assert torch.equal(first, again)
    predict(model, batch_to_ids([["a", "e"]]))
    assert calls == [6, 1]  # only the new word


@pytest.mark.parametrize(
    "how",
    [
        "load_weights",
        "load_state_dict",
        "load_state_dict of a parent module",
        "load_state_dict of each part",
    ],
)
def test_loading_other_weights_empties_the_cache(fixture_paths, how):
    source = BiLM.from_allennlp(*fixture_paths).eval()
    model = BiLM(source.options).eval()
    stale = predict(model)
    calls = count_encoded(model)
    if how == "load_weights":
        load_weights(model, fixture_paths[1])
    elif how == "load_state_dict":
        model.load_state_dict(source.state_dict())
    elif how == "load_state_dict of a parent module":
        torch.nn.ModuleDict({"bilm": model}).load_state_dict({f"bilm.{k}": v for k, v in source.state_dict().items()})
    else:  # the token encoder's weights copied in place, into the same parameters
        model.token_encoder.load_state_dict(source.token_encoder.state_dict())
        model.lstm.load_state_dict(source.lstm.state_dict())
    got = predict(model)
    assert calls == [6]  # every token encoded again
    assert torch.equal(got, predict(source))
    assert (got - stale).abs().max() > 1e-3


@pytest.mark.parametrize("zero_grad", ["set_to_none", "keep_zeros"])
def test_a_torch_optimiser_step_is_never_served_stale(zero_grad):
    model = small_bilm()
    stale = predict(model)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    loss = model(IDS).layers.pow(2).sum()
    predict(model)  # inference between the forward pass and the backward pass...
    loss.backward()
    predict(model)  # ... and between the backward pass and the step
    optimiser.step()
    optimiser.zero_grad(set_to_none=zero_grad == "set_to_none")
    assert_fresh(model, stale)


def test_an_in_place_edit_by_hand_then_clear_token_cache():
    model = small_bilm()
    calls = count_encoded(model)
    stale = predict(model)
    with torch.no_grad():
        model.token_encoder.projection.bias.data.add_(1.0)
    model.clear_token_cache()  # the documented call after editing weights in place
    assert_fresh(model, stale)
    assert calls[:2] == [6, 6]


@pytest.mark.parametrize("then", ["no_grad", "the LSTMs trained, the encoder frozen"])
def test_a_cache_filled_under_inference_mode_takes_new_words_outside_it(then):
    # Under inference mode torch makes "inference tensors", which nothing outside it may
    # write: the cache's storage must not be one (Elmo.initialize's check runs there).
    model = small_bilm()
    with torch.inference_mode():
        predict(model)
    ids = batch_to_ids([["a", "new", "sentence"]])
    if then == "no_grad":
        with torch.no_grad():
            got = model(ids).layers
    else:
        for p in model.token_encoder.parameters():
            p.requires_grad_(False)
        got = model(ids).layers
        got.sum().backward()
        assert all(p.grad is not None for p in model.lstm.parameters())
    with torch.no_grad():
        want = small_bilm()(ids).layers
    # (with gradients the LSTMs run the training recurrence: the same values within float32 rounding)
    torch.testing.assert_close(
        got.detach(), want, rtol=0, atol=0 if then == "no_grad" else 1e-6 * float(want.abs().max())
    )


def test_lowering_max_size_below_what_is_kept_empties_the_cache():
    model = small_bilm()
    expected = predict(model, batch_to_ids([["b", "c"], ["d"]]))
    assert len(model.token_cache) == 5  # with <S> and </S>
    model.token_cache.max_size = 3
    assert len(model.token_cache) == 0
    predict(model, batch_to_ids([["w1"]]))
    assert torch.equal(predict(model, batch_to_ids([["b", "c"], ["d"]])), expected)
    assert len(model.token_cache) <= 3


def test_a_full_cache_evicts_the_least_recently_used_and_serves_every_key_its_own_vector():
    # Vectors that name their key, over calls that fill the cache, evict and hit it again.
    cache = TokenCache(max_size=6)
    encoded: list = []

    def lookup(keys):
        def encode(positions):
            encoded.extend(keys[i] for i in positions.tolist())
            return torch.tensor([[float(keys[i])] for i in positions.tolist()])

        encoded.clear()
        return cache.lookup(keys, encode, weights_key="w")[:, 0].tolist()

    assert lookup([1, 2, 3]) == [1.0, 2.0, 3.0] and encoded == [1, 2, 3]
    assert lookup([4, 5, 6]) == [4.0, 5.0, 6.0]  # full
    assert lookup([3, 1, 2]) == [3.0, 1.0, 2.0] and encoded == []  # hits: 1, 2, 3 now the newest
    assert lookup([7, 8]) == [7.0, 8.0]  # evicts two of 4, 5, 6, used longest ago
    assert len(cache) == 6
    assert lookup([1, 2, 3]) == [1.0, 2.0, 3.0] and encoded == []
    assert lookup([4, 5, 6]) == [4.0, 5.0, 6.0] and len(encoded) == 2  # the two evicted, encoded again
    rng = random.Random(0)
    for _ in range(200):
        keys = rng.sample(range(12), rng.randint(1, 6))
        assert lookup(keys) == [float(k) for k in keys]  # never another key's vector
        assert len(cache) <= 6


@pytest.mark.parametrize("part", ["token_encoder.projection", "token_encoder.highways.0", "token_encoder.convs.1"])
def test_loading_one_part_of_the_token_encoder_empties_the_cache(part):
    # load_state_dict runs the hooks of the module it is called on and of its
    # descendants, never its parents': a load into a part of a part counts too.
    model, source = small_bilm(seed=0), small_bilm(seed=1)
    stale = predict(model)
    calls = count_encoded(model)
    model.get_submodule(part).load_state_dict(source.get_submodule(part).state_dict())
    assert_fresh(model, stale)
    assert calls[0] == 6  # every token encoded again


def test_two_threads_calling_one_bilm_get_what_one_thread_gets():
    # A small cache, so that the threads' calls evict each other's words all the time.
    model = BiLM(BiLMOptions(**SMALL), token_cache_size=32).eval()
    sentences = random_sentences(60, 16, n_words=300)
    with torch.inference_mode():
        uncached = uncached_copy(model)
        expected = [uncached.encode_words([s]) for s in sentences]
    got: list = [None] * len(sentences)

    def encode_every_other(first: int) -> None:
        with torch.inference_mode():
            for i in range(first, len(sentences), 2):
                got[i] = model.encode_words([sentences[i]])

    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(encode_every_other, first) for first in (0, 1)]:
            done.result()  # a thread's error raised here
    wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if not torch.equal(g, e)]
    assert wrong == []
    with torch.inference_mode():  # and the cache the threads left serves every word its own vector
        again = [model.encode_words([s]) for s in sentences]
    assert all(torch.equal(a, e) for a, e in zip(again, expected))


def test_a_copy_or_a_pickle_of_a_bilm_starts_with_an_empty_cache_and_gives_the_same_layers():
    model = small_bilm()
    expected = predict(model)
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert len(copied.token_cache) == 0 and copied.token_cache.max_size == model.token_cache.max_size
        calls = count_encoded(copied)
        assert torch.equal(predict(copied), expected)
        assert calls == [6] and len(copied.token_cache) == 6
        copied.token_encoder.projection.load_state_dict(small_bilm(seed=1).token_encoder.projection.state_dict())
        assert len(copied.token_cache) == 0  # the copy's hooks empty the copy's cache
    assert len(model.token_cache) == 6
