"""The recurrence without gradients from the zero state with its products in int8, on a CPU
inside `int8.int8_products`: the input, recurrent and projection products as `int8.int8_baddbmm`,
the gates, cell and clips in float32 as inference.py computes them (wide form: one tanh over every
gate, the sigmoid gates' pre-activations halved), the input products of each block of steps in one
buffer (`layout.input_scratch`)."""

from typing import List, Optional

import torch

from ..int8 import int8_baddbmm
from .layout import N_GATES, PackedSteps, input_scratch
from .weight_forms import Int8LayerWeights, Stack


def run_layers(stack: Stack, inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
    """Every layer's output (2, n_packed, p), as `BiLSTMStack.forward` gives them."""
    steps = PackedSteps.of(batch_sizes)
    scratch = input_scratch(inputs, steps, stack.W_input[0].shape[3])
    outputs: List[torch.Tensor] = []
    x = inputs
    for layer in range(stack.n_layers):
        out = run_layer(x, steps, scratch, stack.int8_weights(layer), stack.cell_clip, stack.proj_clip)
        if stack.use_skip_connections and layer > 0:
            out += x
        outputs.append(out)
        x = out
    return outputs


def run_layer(
    x: torch.Tensor,
    steps: PackedSteps,
    scratch: torch.Tensor,
    weights: Int8LayerWeights,
    cell_clip: Optional[float],
    proj_clip: Optional[float],
) -> torch.Tensor:
    """One layer from the zero state: x (2, n_packed, p) -> (2, n_packed, p); scratch: the buffer
    of a block's input products."""
    W_input, W_hidden, bias, W_proj = weights
    c_dim, p = W_input.out_features // N_GATES, W_proj.out_features
    batch_sizes, offsets = steps.sizes, steps.offsets
    out = x.new_empty(x.shape)
    h, c = x.new_zeros(2, batch_sizes[0], p), x.new_zeros(2, batch_sizes[0], c_dim)
    for first, end in steps.blocks:
        n_rows = offsets[end] - offsets[first]
        gates_x = scratch[: 2 * n_rows * N_GATES * c_dim].view(2, n_rows, N_GATES * c_dim)
        int8_baddbmm(bias, x[:, offsets[first] : offsets[end]], W_input, out=gates_x)
        for t in range(first, end):
            n, start = batch_sizes[t], offsets[t] - offsets[first]
            gates = int8_baddbmm(gates_x[:, start : start + n], h[:, :n], W_hidden).tanh_()
            sigmoid_gates = gates[:, :, : 3 * c_dim]
            sigmoid_gates.mul_(0.5).add_(0.5)  # sigmoid(x) = 1/2 + tanh(x / 2) / 2
            input_gate, forget_gate, output_gate, new_input = gates.split(c_dim, dim=2)
            c = torch.addcmul(forget_gate * c[:, :n], input_gate, new_input)
            if cell_clip:
                c.clamp_(-cell_clip, cell_clip)
            h = int8_baddbmm(None, output_gate * torch.tanh(c), W_proj)
            if proj_clip:
                h.clamp_(-proj_clip, proj_clip)
            out[:, offsets[t] : offsets[t + 1]] = h
    return out
