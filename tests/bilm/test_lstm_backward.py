"""The LSTM layers' hand-written backward pass (bilm/recurrence/backward.py) against
autograd through `BiLSTMStack`'s steps: the same values, the same gradients,
and the same weights after a few optimiser steps of pretraining."""

from contextlib import contextmanager
from dataclasses import replace

import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.bilm.precision import cpu_has_bf16
from spacy_elmo.bilm.recurrence import BiLSTMStack
from spacy_elmo.training import PretrainingLM, SoftmaxHead

from ..numeric import assert_close_to_scale
from .helpers import WORDS, pretraining_batches, values_and_gradients

OPTIONS = dict(
    char_embedding_dim=8, filters=[(1, 8), (2, 8), (3, 16)], n_highway=1, lstm_dim=24, projection_dim=10, n_layers=2
)


@contextmanager
def stepwise(stack: BiLSTMStack):
    before = stack.paths
    stack.use_paths(replace(before, hand_written_backward=False))
    try:
        yield
    finally:
        stack.use_paths(before)


@pytest.mark.parametrize(
    "changes, batch_sizes",
    [
        ({}, [6, 6, 5, 5, 3, 1, 1]),  # ragged, steps of 1 to 3 rows included
        ({}, [1, 1, 1, 1]),  # one sentence
        ({"cell_clip": None, "proj_clip": None}, [4, 3, 3, 2]),
        ({"use_skip_connections": False, "n_layers": 3}, [5, 4, 2, 2, 2]),
    ],
)
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_values_and_gradients_equal_autograd_through_the_steps(changes, batch_sizes, dropout):
    torch.manual_seed(0)
    options = BiLMOptions(**{**OPTIONS, "cell_clip": 1.0, "proj_clip": 0.5, **changes})
    stack = BiLSTMStack(options).double()
    with torch.no_grad():  # weights strong enough that gates saturate and both clips bite
        for p in stack.parameters():
            p.normal_(0.0, 0.6)
    x = torch.randn(2, sum(batch_sizes), options.projection_dim, dtype=torch.float64)
    weights = [
        torch.randn(2, sum(batch_sizes), options.projection_dim, dtype=torch.float64) for _ in range(options.n_layers)
    ]
    fast = values_and_gradients(stack, x, batch_sizes, weights, dropout)
    with stepwise(stack):
        slow = values_and_gradients(stack, x, batch_sizes, weights, dropout)
    for got, expected in zip(fast[0], slow[0]):
        assert_close_to_scale(got, expected, rtol=1e-12, what="layer output")
    assert_close_to_scale(fast[1], slow[1], rtol=1e-12, what="input gradient")
    for name in slow[2]:
        assert_close_to_scale(fast[2][name], slow[2][name], rtol=1e-12, what=name)
    if options.cell_clip:  # the clips were reached, so their gradients were tested
        assert (fast[0][0].abs() == options.proj_clip).any()


def test_a_second_backward_pass_is_refused_not_wrong():
    # The backward pass reuses the forward pass's buffers: a second one must fail loudly.
    torch.manual_seed(0)
    stack = BiLSTMStack(BiLMOptions(**OPTIONS))
    x = torch.randn(2, 5, OPTIONS["projection_dim"], requires_grad=True)
    outputs, _ = stack(x, [2, 2, 1])
    outputs[-1].sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="inplace"):
        outputs[-1].sum().backward()


def test_pretraining_steps_give_the_same_weights():
    """A few Adam steps of the pretraining model, hand-written backward pass
    against autograd through the steps, float32: the same weights within
    float32 tolerance."""
    batches = pretraining_batches()

    def train(hand_written: bool):
        torch.manual_seed(0)
        lm = PretrainingLM(BiLM(BiLMOptions(**OPTIONS)), SoftmaxHead(10, len(WORDS) + 2), dropout=0.1)
        lm.bilm.lstm.use_paths(replace(lm.bilm.lstm.paths, hand_written_backward=hand_written))
        optimizer = torch.optim.Adam(lm.parameters(), lr=0.01)
        for batch in batches:
            loss = -lm(batch).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return {name: p.detach().clone() for name, p in lm.named_parameters()}

    fast, slow = train(True), train(False)
    for name, expected in slow.items():
        assert_close_to_scale(fast[name], expected, rtol=1e-5, what=name)
    # The steps moved the weights (a test of nothing would pass too).
    torch.manual_seed(0)
    initial = BiLM(BiLMOptions(**OPTIONS)).lstm.W_hidden[0]
    assert (slow["bilm.lstm.W_hidden.0"] - initial).abs().max() > 1e-3


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no bfloat16 instructions (AMX or AVX-512 BF16)")
def test_bf16_products_stay_close_to_float32():
    """Under bf16 autocast the layer's products take bfloat16 inputs (8 bits of mantissa); the
    cell and the outputs stay float32 and within a few hundredths of the float32 values."""
    torch.manual_seed(0)
    stack = BiLSTMStack(BiLMOptions(**OPTIONS, cell_clip=3.0, proj_clip=3.0))
    batch_sizes = [6, 6, 5, 5, 3, 1, 1]
    x = torch.randn(2, sum(batch_sizes), OPTIONS["projection_dim"])
    weights = [torch.randn(2, sum(batch_sizes), OPTIONS["projection_dim"]) for _ in range(2)]
    exact = values_and_gradients(stack, x, batch_sizes, weights)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = values_and_gradients(stack, x, batch_sizes, weights)
    assert all(out.dtype == torch.float32 for out in low[0])
    for got, expected in zip(low[0], exact[0]):
        assert_close_to_scale(got, expected, rtol=3e-2, what="layer output")
    for name in exact[2]:
        assert_close_to_scale(low[2][name], exact[2][name], rtol=5e-2, what=name)
    assert any((a - b).abs().max() > 0 for a, b in zip(low[0], exact[0]))  # it did run in bfloat16
