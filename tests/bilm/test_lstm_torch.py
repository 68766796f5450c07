"""The `torch.nn.LSTM` path of a biLM without clipping (bilm/recurrence/torch_lstm.py, cuDNN on a GPU)
against `BiLSTMStack`'s own steps: the same values and gradients, the same weights after
pretraining steps, and weights that export and load as any others. The CPU runs the path too
when asked (`torch_lstm_devices`), which is how these tests check it without a GPU."""

from contextlib import contextmanager
from dataclasses import replace

import pytest
import torch
from torch import nn

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.bilm.recurrence import BiLSTMStack
from spacy_elmo.bilm.recurrence import stack as stack_module
from spacy_elmo.training import PretrainingLM, SoftmaxHead

from ..numeric import assert_close_to_scale
from .helpers import WORDS, pretraining_batches, values_and_gradients

OPTIONS = dict(
    char_embedding_dim=8,
    filters=[(1, 8), (2, 8), (3, 16)],
    n_highway=1,
    lstm_dim=24,
    projection_dim=10,
    n_layers=2,
    cell_clip=0.0,
    proj_clip=0.0,
)


@contextmanager
def path(stack: BiLSTMStack, torch_lstm: bool, device: str):
    """Run `stack`'s layers on `device` as torch.nn.LSTM (True) or as its own steps under autograd."""
    before = stack.paths
    if torch_lstm:
        stack.use_paths(replace(before, torch_lstm_devices=(torch.device(device).type,)))
    else:
        stack.use_paths(replace(before, torch_lstm_devices=(), hand_written_backward=False))
    try:
        yield
    finally:
        stack.use_paths(before)


@pytest.fixture
def torch_lstm_calls(monkeypatch):
    """How many layers ran as torch.nn.LSTM."""
    calls = []
    layer = stack_module.lstm_layer_torch

    def counted(*args):
        calls.append(1)
        return layer(*args)

    monkeypatch.setattr(stack_module, "lstm_layer_torch", counted)
    return calls


def imitated_gpu_flattening(lstm: nn.LSTM) -> None:
    """What `torch.nn.LSTM.flatten_parameters` does on a GPU, on any device: copy the weights
    into one buffer and re-point each weight tensor at its part of it, in place."""
    weights = lstm._flat_weights
    if any(w is None or w.is_meta for w in weights):
        return
    with torch.no_grad():
        flat = torch.cat([w.reshape(-1) for w in weights])
        offset = 0
        for w in weights:
            w.set_(flat.untyped_storage(), offset, w.shape)
            offset += w.numel()


@pytest.fixture
def gpu_flattening(monkeypatch):
    """torch.nn.LSTM flattening its weights as it does on a GPU, here too."""
    monkeypatch.setattr(nn.modules.rnn.RNNBase, "flatten_parameters", imitated_gpu_flattening)


@pytest.mark.parametrize(
    "changes, batch_sizes",
    [
        ({}, [6, 6, 5, 5, 3, 1, 1]),  # ragged
        ({}, [1, 1, 1]),  # one sentence
        ({"use_skip_connections": False, "n_layers": 3}, [5, 4, 2, 2, 2]),
    ],
)
@pytest.mark.parametrize("dropout", [0.0, 0.3])
@pytest.mark.parametrize("dtype, rtol", [(torch.float64, 1e-10), (torch.float32, 1e-4)])
def test_values_and_gradients_equal_the_steps(
    device, torch_lstm_calls, gpu_flattening, changes, batch_sizes, dropout, dtype, rtol
):
    torch.manual_seed(0)
    options = BiLMOptions(**{**OPTIONS, **changes})
    stack = BiLSTMStack(options).to(device, dtype)
    with torch.no_grad():  # strong weights: gates saturate, cells grow past any clip a test might hide
        for p in stack.parameters():
            p.normal_(0.0, 0.6)
    x = torch.randn(2, sum(batch_sizes), options.projection_dim, dtype=dtype, device=device)
    weights = [torch.randn_like(x) for _ in range(options.n_layers)]
    with path(stack, True, device):
        fast = values_and_gradients(stack, x, batch_sizes, weights, dropout)
    assert len(torch_lstm_calls) == options.n_layers
    with path(stack, False, device):
        slow = values_and_gradients(stack, x, batch_sizes, weights, dropout)
    assert len(torch_lstm_calls) == options.n_layers
    for got, expected in zip(fast[0], slow[0]):
        assert_close_to_scale(got, expected, rtol=rtol, what="layer output")
    assert_close_to_scale(fast[1], slow[1], rtol=rtol, what="input gradient")
    for name in slow[2]:
        assert_close_to_scale(fast[2][name], slow[2][name], rtol=rtol, what=name)


def test_only_a_biLM_without_clipping_takes_the_path(torch_lstm_calls):
    x = torch.randn(2, 5, OPTIONS["projection_dim"], requires_grad=True)
    for clips, expected in [((0.0, 0.0), 2), ((3.0, 0.0), 0), ((0.0, 3.0), 0), ((None, None), 2)]:
        torch_lstm_calls.clear()
        stack = BiLSTMStack(BiLMOptions(**{**OPTIONS, "cell_clip": clips[0], "proj_clip": clips[1]}))
        with path(stack, True, "cpu"):
            stack(x, [2, 2, 1])
            with torch.no_grad():  # inference runs the exact steps
                stack(x, [2, 2, 1])
        assert len(torch_lstm_calls) == expected, clips


def test_pretraining_with_the_path_gives_weights_that_export_and_load(tmp_path, torch_lstm_calls):
    """Adam steps of the pretraining model through torch.nn.LSTM and through the biLM's own
    steps end at the same weights; the exported biLM, loaded back, computes at inference (its
    own steps) the layers the trained model computes through torch.nn.LSTM."""
    batches = pretraining_batches()

    def train(torch_lstm: bool) -> PretrainingLM:
        torch.manual_seed(0)
        lm = PretrainingLM(BiLM(BiLMOptions(**OPTIONS)), SoftmaxHead(10, len(WORDS) + 2), dropout=0.1)
        optimizer = torch.optim.Adam(lm.parameters(), lr=0.01)
        with path(lm.bilm.lstm, torch_lstm, "cpu"):
            for batch in batches:
                loss = -lm(batch).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        return lm

    fast = train(True)
    assert len(torch_lstm_calls) == len(batches) * OPTIONS["n_layers"]
    slow = dict(train(False).named_parameters())
    for name, weights in fast.named_parameters():
        assert_close_to_scale(weights.detach(), slow[name].detach(), rtol=1e-5, what=name)

    fast.bilm.save_allennlp(tmp_path)
    loaded = BiLM.from_allennlp(tmp_path)
    assert loaded.options.cell_clip in (0.0, None) and loaded.options.proj_clip in (0.0, None)
    fast.eval()
    with path(fast.bilm.lstm, True, "cpu"):
        trained_top = fast.top_layer(batches[0])  # under autograd: torch.nn.LSTM
    loaded_lm = PretrainingLM(loaded, fast.softmax).eval()
    with torch.no_grad():
        loaded_top = loaded_lm.top_layer(batches[0])  # the loaded biLM's own steps
    assert_close_to_scale(loaded_top, trained_top.detach(), rtol=1e-5, what="top layer after export")


def test_under_autocast_the_layers_stay_float32(device, torch_lstm_calls):
    """torch's cuDNN LSTM would run in float16 under any autocast (bfloat16 included, with no
    loss scaling): the path runs it in float32, the same values as without autocast."""
    torch.manual_seed(0)
    stack = BiLSTMStack(BiLMOptions(**OPTIONS)).to(device)
    x = torch.randn(2, 12, OPTIONS["projection_dim"], device=device, requires_grad=True)
    with path(stack, True, device):
        plain, _ = stack(x, [4, 4, 3, 1])
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
            autocast, _ = stack(x, [4, 4, 3, 1])
    assert len(torch_lstm_calls) == 2 * OPTIONS["n_layers"]
    for got, expected in zip(autocast, plain):
        assert got.dtype == torch.float32 and torch.equal(got, expected)
