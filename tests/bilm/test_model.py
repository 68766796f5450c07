import json

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids, words_to_ids
from spacy_elmo.bilm.char_ids import PAD_CHAR
from spacy_elmo.bilm.reference import reference_layers

from ..numeric import assert_close_to_scale, max_error, scale_of
from .helpers import fixture_batches


def top_layer_halves(output, row, n):
    top = output.layers[-1, row, :n].cpu().numpy()
    half = top.shape[1] // 2
    return numpy.stack([top[:, :half], top[:, half:]])


def test_stateful_reproduces_all_reference_batches(fixture_paths, fixture_dir, device):
    model = BiLM.from_allennlp(*fixture_paths, stateful=True).to(device).eval()
    with torch.inference_mode():
        for batch, expected in fixture_batches(fixture_dir):
            out = model(batch_to_ids(batch).to(device))
            for k, sentence in enumerate(batch):
                assert_close_to_scale(top_layer_halves(out, k, len(sentence)), expected[k])
    model.reset_states()
    batch, expected = next(fixture_batches(fixture_dir))
    with torch.inference_mode():
        out = model(batch_to_ids(batch).to(device))
    assert_close_to_scale(top_layer_halves(out, 0, len(batch[0])), expected[0])


def test_stateless_reproduces_first_batch_only(fixture_paths, fixture_dir, device):
    model = BiLM.from_allennlp(*fixture_paths).to(device).eval()
    batches = list(fixture_batches(fixture_dir))
    with torch.inference_mode():
        for i, (batch, expected) in enumerate(batches[:2]):
            out = model(batch_to_ids(batch).to(device))
            diffs = [
                max_error(top_layer_halves(out, k, len(s)), expected[k]) / scale_of(expected[k])
                for k, s in enumerate(batch)
            ]
            if i == 0:
                assert max(diffs) <= 1e-6
            else:  # the reference carried state over; a stateless model must not
                assert max(diffs) > 1e-2


def test_token_representations_match_reference(fixture_paths, fixture_dir):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    words = (fixture_dir / "vocab_test.txt").read_text(encoding="utf8").splitlines()
    with h5py.File(fixture_dir / "elmo_token_embeddings.hdf5", "r") as f:
        expected = f["embedding"][...]
    assert len(words) == expected.shape[0]
    from spacy_elmo.bilm import words_to_ids

    with torch.inference_mode():
        got = model.encode_tokens(torch.from_numpy(words_to_ids(words))).numpy()
    assert_close_to_scale(got, expected)
    # Layer 0 of the full model is the same representation, twice.
    with torch.inference_mode():
        out = model(batch_to_ids([words[:20]]))
    assert_close_to_scale(out.layers[0, 0, :, :16], expected[:20])
    assert_close_to_scale(out.layers[0, 0, :, 16:], expected[:20])


def test_save_load_round_trip_is_bit_identical(fixture_paths, fixture_dir, tmp_path):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    model.save_allennlp(tmp_path / "a")
    again = BiLM.from_allennlp(tmp_path / "a").eval()
    again.save_allennlp(tmp_path / "b")
    third = BiLM.from_allennlp(tmp_path / "b" / "options.json", tmp_path / "b" / "weights.hdf5").eval()
    batch, _ = next(fixture_batches(fixture_dir))
    ids = batch_to_ids(batch)
    with torch.inference_mode():
        outs = [m(ids).layers for m in (model, again, third)]
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[1], outs[2])
    assert json.loads((tmp_path / "a" / "options.json").read_text()) == json.loads(fixture_paths[0].read_text())


def test_float16_storage_halves_the_file_and_loads_back_as_float32(fixture_paths, fixture_dir, tmp_path):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    model.save_allennlp(tmp_path / "full")
    model.save_allennlp(tmp_path / "half", dtype="float16")
    with h5py.File(tmp_path / "half" / "weights.hdf5", "r") as f:
        kinds = set()
        f.visititems(lambda name, item: kinds.add(item.dtype) if isinstance(item, h5py.Dataset) else None)
    assert kinds == {numpy.dtype("float16")}
    sizes = [(tmp_path / name / "weights.hdf5").stat().st_size for name in ("full", "half")]
    assert sizes[1] < 0.6 * sizes[0]
    half = BiLM.from_allennlp(tmp_path / "half").eval()
    for (name, p), (_, q) in zip(model.named_parameters(), half.named_parameters()):
        assert q.dtype == torch.float32
        assert torch.equal(q, p.detach().half().float()), name  # each weight rounded to float16, no more
    batch, _ = next(fixture_batches(fixture_dir))
    with torch.inference_mode():
        exact, rounded = (m(batch_to_ids(batch)).layers for m in (model, half))
    assert_close_to_scale(rounded, exact, rtol=1e-2)
    assert not torch.equal(rounded, exact)


def test_float16_storage_refuses_weights_beyond_its_range(fixture_paths, tmp_path):
    from spacy_elmo.errors import ConfigError

    model = BiLM.from_allennlp(*fixture_paths)
    with torch.no_grad():
        model.lstm.W_proj[0][0, 0, 0] = 70000.0
    with pytest.raises(ConfigError, match="E532.*beyond float16"):
        model.save_allennlp(tmp_path / "half", dtype="float16")
    assert not (tmp_path / "half" / "weights.hdf5").exists()
    with pytest.raises(ConfigError, match="E532.*'bfloat16'"):
        model.save_allennlp(tmp_path / "other", dtype="bfloat16")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused_before_anything_is_written(fixture_paths, tmp_path, value):
    # A diverged fine-tuning saved over a good pipeline would leave one that cannot be loaded (E502).
    from spacy_elmo.errors import DivergedRunError
    from spacy_elmo.models.bilm import bilm_to_bytes

    model = BiLM.from_allennlp(*fixture_paths)
    with torch.no_grad():
        model.lstm.W_hidden[1][1, 2, 0, 3] = value
    for dtype in ("float32", "float16"):
        with pytest.raises(DivergedRunError, match="E536.*'RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0' holds 1 NaN"):
            model.save_allennlp(tmp_path / dtype, dtype=dtype)
        assert not (tmp_path / dtype / "weights.hdf5").exists()
    with pytest.raises(DivergedRunError, match="E536"):
        bilm_to_bytes(model)


def test_non_finite_weights_stored_as_float16_are_refused_at_load_as_float32_ones_are(fixture_paths, tmp_path):
    from spacy_elmo.errors import DamagedFileError

    BiLM.from_allennlp(*fixture_paths).save_allennlp(tmp_path, dtype="float16")
    with h5py.File(tmp_path / "weights.hdf5", "a") as f:
        f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"][0, 0] = numpy.float16("inf")
    with pytest.raises(DamagedFileError, match="E502"):
        BiLM.from_allennlp(tmp_path)


def test_sentence_alone_equals_sentence_in_a_padded_batch(fixture_paths, fixture_dir):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    sentences = json.loads((fixture_dir / "sentences.json").read_text())
    target = sentences[1][3].split()
    others = [s.split() for s in sentences[0][:6]] + [["x"], []]
    with torch.inference_mode():
        alone = model(batch_to_ids([target])).layers[:, 0]
        for position in (0, 3, len(others)):
            batch = others[:position] + [target] + others[position:]
            inside = model(batch_to_ids(batch)).layers[:, position, : len(target)]
            assert_close_to_scale(inside, alone)


SMALL = dict(
    char_embedding_dim=8,
    filters=[(1, 8), (2, 8), (3, 16), (5, 16)],
    n_highway=1,
    lstm_dim=32,
    projection_dim=12,
    n_layers=2,
)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"activation": "tanh", "n_highway": 0},
        {"use_skip_connections": False, "n_layers": 3, "n_highway": 2},
        {"cell_clip": None, "proj_clip": None, "n_characters": 261},
        {"max_characters_per_token": 12, "filters": [(1, 4), (4, 8)]},
    ],
)
def test_fast_path_equals_straightforward_computation(changes, device):
    torch.manual_seed(0)
    options = BiLMOptions(**{**SMALL, **changes})
    model = BiLM(options).eval()
    with torch.no_grad():  # realistic scale: gates that saturate, clips that bite
        for p in model.parameters():
            p.mul_(3.0)
    sentences = [
        "A quick brown fox jumps over the lazy dog .".split(),
        ["x" * 60, "antidisestablishmentarianism", "é" * 30, ""],
        [],
        ["the"] * 25,
        ["🙂", "b"],
    ]
    ids = batch_to_ids(sentences, options.max_characters_per_token)
    expected = reference_layers(model, ids)
    model.to(device)
    with torch.inference_mode():
        got = model(ids.to(device))
        again = model(ids.to(device))  # now from the token cache
    assert got.layers.shape == (options.n_layers + 1, 5, 25, 2 * options.projection_dim)
    assert torch.equal(got.mask.cpu(), ids[:, :, 0] > 0)
    # Weights x 3 give values up to ~55: the tolerance follows their scale.
    assert_close_to_scale(got.layers, expected)
    assert torch.equal(got.layers, again.layers)


def test_padding_only_windows_enter_the_max_pool_whatever_the_call_reaches():
    """A word's vector is the same from calls of words no longer than itself, whose windows stop
    just past it, as from a call that reaches every position, and is the full computation's, also
    where a window of padding alone is the largest (the padding's embedding made large): for the
    widest filter over the longest word of a call, the encoder adds that window by itself."""
    torch.manual_seed(0)
    model = BiLM(BiLMOptions(**SMALL)).eval()
    with torch.no_grad():
        model.token_encoder.char_embed[PAD_CHAR + 1].fill_(4.0)
    # 0 to 44 bytes, then one of 48 that makes the call reach position 50.
    ids = torch.from_numpy(words_to_ids(["x" * n for n in range(45)] + ["y" * 48]))
    with torch.inference_mode():
        together = model.encode_tokens(ids)[:-1]
        alone = torch.cat([model.encode_tokens(ids[i : i + 1].expand(20, -1))[:1] for i in range(len(ids) - 1)])
    expected = reference_layers(model, ids[None, :-1])[0, 0, :, : SMALL["projection_dim"]]
    assert torch.equal(together, alone)
    assert_close_to_scale(together, expected)


def test_token_cache_is_bounded_and_never_stale():
    torch.manual_seed(0)
    model = BiLM(BiLMOptions(**SMALL), token_cache_size=8).eval()
    ids = batch_to_ids([["a", "b", "c"], ["a", "d"]])
    with torch.no_grad():
        first = model(ids).layers
        assert len(model.token_cache) == 6  # four words and the two boundaries
        big = batch_to_ids([[f"w{i}" for i in range(20)]])
        model(big)  # more distinct tokens than the cache holds: computed, not cached
        assert len(model.token_cache) <= 8
        model(batch_to_ids([[f"v{i}" for i in range(5)]]))
        assert len(model.token_cache) == 8
        model.token_encoder.projection.bias.add_(1.0)  # an in-place edit by hand...
        model.clear_token_cache()  # ... and the call it needs
        changed = model(ids).layers
    assert not torch.allclose(first, changed)
    assert_close_to_scale(changed, reference_layers(model, ids))


def test_gradients_flow_when_training():
    torch.manual_seed(0)
    model = BiLM(BiLMOptions(**SMALL)).train()
    out = model(batch_to_ids([["a", "b", "a"], ["c"]]))
    out.layers.sum().backward()
    assert len(model.token_cache) == 0
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None for g in grads)
    assert model.token_encoder.char_embed.grad[ord("a") + 1].abs().sum() > 0
