"""One LSTM layer with projection run by `torch.nn.LSTM` (cuDNN on a GPU).

`torch.nn.LSTM(proj_size=...)` computes the projected LSTM cell of bilm-tf
without clipping: on a GPU it runs as cuDNN's fused recurrence, many times
faster in pretraining than `BiLSTMStack`'s step-by-step loop. So a biLM
trained without clipping (``cell_clip = 0``, ``proj_clip = 0``) can take this
path, and its weights stay `BiLSTMStack`'s parameters: the layer is called
with them mapped to `torch.nn.LSTM`'s layout, each time (`torch.func.functional_call`),
so gradients reach them and the exported weights are the usual bilm-tf ones.

The mapping, per direction d: `torch.nn.LSTM` orders the gates (input, forget,
cell, output), bilm-tf (input, new input, forget, output); `weight_ih` is
(4 * c, p), ``W_input[d]`` (4, p, c), so it is the gates reordered and each
transposed; `weight_hh` likewise from ``W_hidden[d]``; `weight_hr` (p, c) is
``W_proj[d]`` transposed; `bias_ih` carries the bias and the constant forget
bias of 1, `bias_hh` is zero. The two directions are two calls: the backward
direction's input is already reversed (layout.py), and each direction has its
own input above the first layer, which a bidirectional `torch.nn.LSTM` would not
allow.

Two things `torch.nn.LSTM` would otherwise do to weights it does not own:

- On a GPU, given new weight tensors it "flattens" them: copies them into one
  cuDNN buffer and re-points each tensor at its part of it, in place. Here those
  tensors are views of the biLM's parameters and of the mapping's results, which
  autograd has saved: re-pointing them would corrupt the backward pass (an error
  for the projection, silently wrong bias gradients). `_BorrowedWeightsLSTM`
  never flattens; cuDNN then copies the weights into its buffer itself, as it
  does for any weights that are not already one.
- Under autocast its cuDNN kernel runs in float16, whatever autocast's type
  (bfloat16 included), with no loss scaling. The layer runs in float32 here,
  autocast or not: precision "bf16" keeps bfloat16 for the rest of the biLM.

`tests/bilm/test_lstm_torch.py` checks values and gradients against the
step-by-step path, with the GPU's flattening imitated on the CPU.
"""

import warnings
from typing import Sequence

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import PackedSequence

# Position in bilm-tf's order (input, new input, forget, output) of each of
# torch's gates (input, forget, cell, output).
TORCH_GATE_ORDER = (0, 2, 1, 3)


class _BorrowedWeightsLSTM(nn.LSTM):
    """A `torch.nn.LSTM` that runs on weights passed in (`functional_call`) and so never
    re-points them into a flat buffer of its own (see the module docstring)."""

    def flatten_parameters(self) -> None:
        pass


def lstm_layer_torch(
    x: torch.Tensor,
    W_input: torch.Tensor,
    W_hidden: torch.Tensor,
    bias: torch.Tensor,
    forget_bias: torch.Tensor,
    W_proj: torch.Tensor,
    batch_sizes: Sequence[int],
) -> torch.Tensor:
    """One layer of both directions from the zero state, without clipping, as
    the step-by-step path computes it (before the skip connection), in x's type even under autocast.

    x: (2, n_packed, p), packed time-major (layout.py); W_input and W_hidden
    (2, 4, p, c); bias (2, 4, c); forget_bias (4, c), not trained; W_proj
    (2, c, p). RETURNS: (2, n_packed, p).
    """
    c, p = W_proj.shape[1], W_proj.shape[2]
    # The module holds no weights (meta device): each call gets the biLM's, so nothing
    # outlives the call and nothing is shared between threads.
    lstm = _BorrowedWeightsLSTM(p, c, num_layers=1, proj_size=p, device="meta")
    sizes = torch.as_tensor(list(batch_sizes), dtype=torch.int64)
    order = list(TORCH_GATE_ORDER)
    outputs = []
    with torch.autocast(x.device.type, enabled=False):
        for d in range(2):
            weights = {
                "weight_ih_l0": W_input[d, order].transpose(1, 2).reshape(4 * c, p),
                "weight_hh_l0": W_hidden[d, order].transpose(1, 2).reshape(4 * c, p),
                "bias_ih_l0": (bias[d] + forget_bias)[order].reshape(4 * c),
                "bias_hh_l0": bias.new_zeros(4 * c),
                "weight_hr_l0": W_proj[d].t(),
            }
            with warnings.catch_warnings():
                # cuDNN's own copy of weights that are not one flat buffer (above) comes with this warning.
                warnings.filterwarnings("ignore", message=".*contiguous chunk of memory.*")
                packed, _ = functional_call(lstm, weights, (PackedSequence(x[d], sizes),))
            outputs.append(packed.data)
    return torch.stack(outputs)
