"""precision "int8": the LSTMs' products in int8 on a CPU (spacy_elmo/bilm/int8.py).

Bounds (the issue's targets): per layer, the mean per-token cosine to float32 at
least 0.999 and the worst at least 0.99; the layer-0 token vectors exactly
float32's. Float32 itself stays bit for bit what it was (the rest of tests/bilm).
"""

import json

import pytest
import torch

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.bilm import int8 as int8_module
from spacy_elmo.bilm.int8 import (
    QMAX,
    WEIGHT_QMAX,
    int8_baddbmm,
    int8_pays,
    int8_products,
    int8_runs,
    onednn_available,
    quantize_weight,
)
from spacy_elmo.bilm.precision import INT8, INT8_ALWAYS, PRECISIONS, check_precision, precision

MEAN_COSINE, WORST_COSINE = 0.999, 0.99
SLOWER = "times as fast as float32"
# The kernels of int8.py: oneDNN's (packed weights) where this PyTorch has it, and torch._int_mm.
KERNELS = [
    pytest.param(True, id="onednn", marks=pytest.mark.skipif(not onednn_available(), reason="no oneDNN")),
    pytest.param(False, id="int_mm"),
]


@pytest.fixture(scope="module")
def bilm(fixture_paths):
    return BiLM.from_allennlp(*fixture_paths).eval()


@pytest.fixture(scope="module")
def sentences(fixture_dir):
    return [s.split() for s in json.loads((fixture_dir / "sentences.json").read_text())[0]]


def layers_of(bilm, sentences):
    with torch.inference_mode():
        out = bilm(batch_to_ids(sentences))
    return out.layers[:, out.mask]  # (n_layers + 1, n_tokens, 2p)


def cosines(actual, expected):
    return torch.nn.functional.cosine_similarity(actual, expected, dim=-1)  # per layer and token


def test_int8_layers_are_within_the_bounds_of_float32(bilm, sentences):
    expected = layers_of(bilm, sentences)
    with int8_products():
        got = layers_of(bilm, sentences)
    assert torch.equal(got[0], expected[0])  # the token vectors stay float32
    cos = cosines(got[1:], expected[1:])
    assert (cos.mean(dim=1) >= MEAN_COSINE).all(), cos.mean(dim=1)
    assert (cos.min(dim=1).values >= WORST_COSINE).all(), cos.min(dim=1).values
    assert not torch.equal(got[1:], expected[1:])  # int8 products did run


@pytest.mark.parametrize("pack", KERNELS)
def test_an_int8_product_is_within_its_rounding_bound(pack):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 37, 48, generator=generator) * torch.rand(2, 37, 1, generator=generator) * 10
    w = torch.randn(2, 48, 24, generator=generator) * torch.rand(2, 1, 24, generator=generator)
    bias = torch.randn(2, 1, 24, generator=generator)
    got = int8_baddbmm(bias, x, quantize_weight(w, pack=pack)).double()
    exact = bias.double() + x.double() @ w.double()
    # Rounding x to its row's steps r and W to its column's steps s errs at most half a
    # step each: |error| <= sum_k (|x| s / 2 + |W| r / 2 + r s / 4), plus float32 rounding.
    r = x.abs().amax(dim=2, keepdim=True).double() / QMAX
    s = w.abs().amax(dim=1, keepdim=True).double() / WEIGHT_QMAX
    bound = (
        x.abs().double() @ (s / 2).expand_as(w)
        + (r / 2) * w.abs().double().sum(dim=1, keepdim=True)
        + (w.shape[1] * r * s / 4)
    )
    error = (got - exact).abs()
    assert (error <= bound * (1 + 1e-5) + 1e-6 * exact.abs().max()).all()
    assert error.max() > 1e-4 * exact.abs().max()  # rounded, not float32


@pytest.mark.parametrize("pack", KERNELS)
def test_a_rows_int8_product_does_not_depend_on_the_other_rows(pack):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(2, 40, 32, generator=generator)
    w = quantize_weight(torch.randn(2, 32, 16, generator=generator), pack=pack)
    assert torch.equal(int8_baddbmm(None, x, w)[:, 5:8], int8_baddbmm(None, x[:, 5:8], w))
    assert torch.equal(int8_baddbmm(None, x, w)[:, 5:6], int8_baddbmm(None, x[:, 5:6], w))  # one row alone


@pytest.mark.parametrize("pack", KERNELS)
def test_products_made_in_chunks_of_rows_are_those_of_each_row_alone(monkeypatch, pack):
    monkeypatch.setattr(int8_module, "ROWS_PER_CALL", 7)  # 40 rows: six chunks, the last one short
    generator = torch.Generator().manual_seed(4)
    x, bias = torch.randn(2, 40, 32, generator=generator), torch.randn(2, 40, 16, generator=generator)
    w = quantize_weight(torch.randn(2, 32, 16, generator=generator), pack=pack)
    out = torch.full((2, 40, 16), float("nan"))
    assert int8_baddbmm(bias, x, w, out=out) is out
    for row in range(40):
        assert torch.equal(out[:, row : row + 1], int8_baddbmm(bias[:, row : row + 1], x[:, row : row + 1], w))
    assert torch.equal(int8_baddbmm(None, x, w), int8_baddbmm(torch.zeros(2, 1, 16), x, w))


@pytest.mark.skipif(not onednn_available(), reason="no oneDNN")
def test_the_kernels_compute_the_same_integer_products():
    generator = torch.Generator().manual_seed(2)
    x, w = torch.randn(2, 33, 300, generator=generator), torch.randn(2, 300, 70, generator=generator)
    bias = torch.randn(2, 1, 70, generator=generator)
    onednn = int8_baddbmm(bias, x, quantize_weight(w, pack=True))
    int_mm = int8_baddbmm(bias, x, quantize_weight(w, pack=False))
    # The same integers, scaled in another order: float32 rounding apart.
    torch.testing.assert_close(onednn, int_mm, rtol=0, atol=1e-6 * int_mm.abs().max().item())


@pytest.mark.skipif(not onednn_available(), reason="no oneDNN")
def test_the_largest_integers_do_not_saturate():
    # Rows at their largest (QMAX, as uint8 127) against weights at theirs (±127): without
    # VNNI oneDNN adds pairs of products in 16 bits, which 7-bit rows keep exact.
    for x_sign in (1.0, -1.0):
        x = torch.full((2, 16, 512), x_sign)
        for w_sign in (1.0, -1.0):
            w = torch.full((2, 512, 64), w_sign)
            got = int8_baddbmm(None, x, quantize_weight(w, pack=True))
            assert torch.equal(got, torch.full_like(got, 512 * x_sign * w_sign))
    generator = torch.Generator().manual_seed(3)  # and every pair of signs at full scale
    x = torch.randn(2, 16, 512, generator=generator).sign()
    w = torch.randn(2, 512, 64, generator=generator).sign()
    torch.testing.assert_close(int8_baddbmm(None, x, quantize_weight(w, pack=True)), x @ w, rtol=0, atol=1e-4)


def test_a_copy_of_a_biLM_that_ran_int8_runs_int8_alike(bilm, sentences):
    import copy

    with int8_products():
        expected = layers_of(bilm, sentences)
        copied = copy.deepcopy(bilm)  # the int8 weights (oneDNN's packed ones) are made again
        assert torch.equal(layers_of(copied, sentences), expected)


def test_under_int8_a_sentences_layers_do_not_depend_on_its_batch(bilm, sentences):
    with int8_products():
        alone = layers_of(bilm, sentences[:1])
        in_batch = layers_of(bilm, sentences)
    assert torch.equal(in_batch[:, : alone.shape[1]], alone)


def test_int8_weights_are_made_once_per_version_of_the_weights(fixture_paths, sentences):
    bilm = BiLM.from_allennlp(*fixture_paths).eval()
    made = bilm.lstm.int8_weights(0)
    assert bilm.lstm.int8_weights(0) is made
    with int8_products():
        before = layers_of(bilm, sentences)
        with torch.no_grad():
            bilm.lstm.W_hidden[0].mul_(0.5)  # changed in place: same storage, new version
        after = layers_of(bilm, sentences)
    assert bilm.lstm.int8_weights(0) is not made
    assert not torch.equal(after[1], before[1])
    with torch.no_grad():
        bilm.lstm.W_hidden[0].mul_(2.0)  # back to the loaded values (a power of two: exact)
    with int8_products():
        assert torch.equal(layers_of(bilm, sentences), before)


def test_float32_and_gradients_are_untouched_by_int8(bilm, sentences):
    expected = layers_of(bilm, sentences)
    ids = batch_to_ids(sentences)
    with int8_products():
        layers_of(bilm, sentences)
        with torch.enable_grad():
            bilm.lstm.W_proj[0].requires_grad_(True)
            try:
                trained = bilm(ids).layers[:, ids[:, :, 0] > 0]
            finally:
                bilm.lstm.W_proj[0].requires_grad_(False)
    assert torch.equal(layers_of(bilm, sentences), expected)
    torch.testing.assert_close(trained.detach(), expected, rtol=0, atol=1e-5 * expected.abs().max().item())


SHAPES = ((4, 8), (8, 4))


def test_precision_int8_where_int8_pays_runs_int8(monkeypatch, recwarn):
    monkeypatch.setattr(int8_module, "int8_pays", lambda shapes, threads: True)
    with precision("cpu", INT8):
        assert int8_runs(SHAPES)
    assert not int8_runs(SHAPES)  # only inside the block
    assert not recwarn.list


def test_precision_int8_where_int8_is_slower_says_so_and_computes_float32(monkeypatch, bilm, sentences):
    monkeypatch.setattr(int8_module, "int8_pays", lambda shapes, threads: False)
    expected = layers_of(bilm, sentences)
    with pytest.warns(UserWarning, match=SLOWER) as caught:
        with precision("cpu", INT8):
            got = layers_of(bilm, sentences)
    assert torch.equal(got, expected)
    p, c = bilm.lstm.W_proj[0].shape[2], bilm.lstm.W_proj[0].shape[1]
    assert f"{p} -> {4 * c}, {c} -> {p}" in str(caught[0].message)  # names the LSTM's sizes


def test_precision_int8_always_runs_int8_where_it_is_slower(monkeypatch, bilm, sentences, recwarn):
    monkeypatch.setattr(int8_module, "int8_pays", lambda shapes, threads: False)
    with int8_products():
        expected = layers_of(bilm, sentences)
    with precision("cpu", INT8_ALWAYS):
        got = layers_of(bilm, sentences)
    assert torch.equal(got, expected)
    assert not recwarn.list


def test_whether_int8_pays_is_timed_per_lstm_size(monkeypatch):
    # A tiny LSTM's int8 products are dominated by their quantising, a large one's by the
    # products: the probe times the sizes it is asked about (its answer is the CPU's).
    timed = []

    def recording(weight, pack=None):
        timed.append(tuple(weight.shape))
        return quantize_weight(weight, pack)

    monkeypatch.setattr(int8_module, "quantize_weight", recording)
    assert isinstance(int8_pays.__wrapped__(SHAPES, 1), bool)
    assert timed == [(2, 4, 8), (2, 8, 4)]  # both directions, each of the step's products
    monkeypatch.undo()
    assert int8_pays.__wrapped__(((1, 1),), 1) is False  # never 1.5 times as fast as one multiply


def test_precision_int8_on_a_gpu_says_so_and_computes_float32():
    with pytest.warns(UserWarning, match='"int8" is for CPUs'):
        with precision("cuda", INT8):
            assert not int8_runs(SHAPES)


def test_int8_is_an_inference_precision_only():
    assert check_precision(INT8) == INT8 and check_precision(INT8_ALWAYS) == INT8_ALWAYS
    assert INT8 not in PRECISIONS and INT8_ALWAYS not in PRECISIONS  # pretraining's settings take PRECISIONS


def test_without_an_int8_kernel_int8_does_not_pay(monkeypatch):
    def no_kernel(*args):
        raise RuntimeError("_int_mm: no kernel for this CPU")

    monkeypatch.setattr(int8_module, "onednn_available", lambda: False)
    monkeypatch.setattr(torch, "_int_mm", no_kernel)
    assert int8_pays.__wrapped__(SHAPES, 1) is False  # the probe itself, not the process's cached answer
