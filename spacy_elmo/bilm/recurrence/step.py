"""The recurrence step by step, each step a few differentiable torch operations.

The reference the other paths are checked against, and the path for every case they leave out:
a state to start from or to hand back (a stateful biLM), gradients from such a state, autocast
without gradients, and training with `RecurrencePaths.hand_written_backward` off. Under autograd
every step is recorded, so gradients reach the weights, the inputs and the initial state.
"""

from typing import List, Optional, Tuple

import torch
from torch import nn

from ..products import MIN_ROWS, pad_rows
from .layout import N_GATES, LayerState, PackedSteps, input_scratch
from .weight_forms import Stack, layer_weights


def run_layers(
    stack: Stack,
    inputs: torch.Tensor,
    batch_sizes: List[int],
    initial_state: Optional[List[LayerState]],
    return_final_state: bool,
    dropout: float,
    product_dtype: Optional[torch.dtype],
    needs_grad: bool,
) -> Tuple[List[torch.Tensor], Optional[List[LayerState]]]:
    """Every layer step by step, with `BiLSTMStack.forward`'s arguments and
    results; product_dtype: the matrix products' type under autocast (None
    outside it); needs_grad: whether the call is recorded for a backward pass."""
    steps = PackedSteps.of(batch_sizes)
    # Under autocast the products run in bfloat16/float16 and make their own
    # outputs; the shared float32 buffer is for full precision only.
    full_precision = not needs_grad and product_dtype is None
    scratch = input_scratch(inputs, steps, stack.W_input[0].shape[3]) if full_precision else None
    outputs: List[torch.Tensor] = []
    final_states: List[LayerState] = []
    x = inputs
    for layer in range(stack.n_layers):
        state = initial_state[layer] if initial_state is not None else None
        out, final_state = _layer(stack, layer, x, steps, scratch, state, return_final_state, product_dtype)
        if stack.use_skip_connections and layer > 0:
            out = out + x
        outputs.append(out)
        final_states.append(final_state)
        x = nn.functional.dropout(out, dropout) if dropout and layer + 1 < stack.n_layers else out
    return outputs, (final_states if return_final_state else None)


def _layer(
    stack: Stack,
    layer: int,
    x: torch.Tensor,
    steps: PackedSteps,
    scratch: Optional[torch.Tensor],
    state: Optional[LayerState],
    return_final_state: bool,
    product_dtype: Optional[torch.dtype],
) -> Tuple[torch.Tensor, LayerState]:
    """One layer from `state` (zeros when None): its packed output (2, n_packed, p)
    before any skip connection, and each row's state after its last step (the
    initial state itself unless `return_final_state`)."""
    batch_sizes, offsets = steps.sizes, steps.offsets
    if state is None:
        batch = batch_sizes[0] if batch_sizes else 0
        h = x.new_zeros(2, batch, stack.W_proj[layer].shape[2])
        c = x.new_zeros(2, batch, stack.W_proj[layer].shape[1])
    else:
        h, c = state
    out = x.new_empty(x.shape)
    final_h, final_c = (h.clone(), c.clone()) if return_final_state else (h, c)
    W_input, W_hidden, W_proj = layer_weights(stack, layer, product_dtype)
    bias, forget_bias = stack.bias[layer], stack.forget_bias
    cell_clip, proj_clip = stack.cell_clip, stack.proj_clip
    for first, end in steps.blocks:
        block_start = offsets[first]
        gates_x = input_gates(x[:, block_start : offsets[end]], W_input, bias, forget_bias, scratch)
        for t in range(first, end):
            n, start = batch_sizes[t], offsets[t] - block_start
            h, c = step(gates_x[:, :, start : start + n], h[:, :n], c[:, :n], W_hidden, W_proj, cell_clip, proj_clip)
            out[:, offsets[t] : offsets[t + 1]] = h
            ending = batch_sizes[t + 1] if t + 1 < len(batch_sizes) else 0
            if return_final_state and ending < n:
                final_h[:, ending:n] = h[:, ending:n]
                final_c[:, ending:n] = c[:, ending:n]
    return out, (final_h, final_c)


def input_gates(
    x: torch.Tensor,
    W_input: torch.Tensor,
    bias: torch.Tensor,
    forget_bias: torch.Tensor,
    scratch: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """The input-to-gate products and biases of many rows in one GEMM.

    x: (2, rows, p) -> (2, 4, rows, c), written into `scratch` (a flat buffer
    of at least that size) when given. W_input (2, 4, p, c); bias (2, 4, c);
    forget_bias (4, c), added to it.
    """
    _, rows, p = x.shape
    if rows < MIN_ROWS:  # see products.py
        return input_gates(pad_rows(x, 1), W_input, bias, forget_bias, scratch)[:, :, :rows]
    c = W_input.shape[3]
    bias = (bias + forget_bias).view(2 * N_GATES, 1, c)
    per_gate_x = x.unsqueeze(1).expand(2, N_GATES, rows, p).reshape(2 * N_GATES, rows, p)
    W = W_input.view(2 * N_GATES, p, c)
    if scratch is None:
        gates_x = torch.baddbmm(bias, per_gate_x, W)
    else:
        gates_x = scratch[: 2 * N_GATES * rows * c].view(2 * N_GATES, rows, c)
        torch.baddbmm(bias, per_gate_x, W, out=gates_x)
    return gates_x.view(2, N_GATES, rows, c)


def step(
    gates_x: torch.Tensor,
    h: torch.Tensor,
    c: torch.Tensor,
    W_hidden: torch.Tensor,
    W_proj: torch.Tensor,
    cell_clip: Optional[float],
    proj_clip: Optional[float],
) -> LayerState:
    """One time step for the n running rows of both directions.

    gates_x: (2, 4, n, c); h: (2, n, p); c: (2, n, c) -> new (h, c).
    """
    n = gates_x.shape[2]
    if n < MIN_ROWS:  # see products.py
        h, c = step(pad_rows(gates_x, 2), pad_rows(h, 1), pad_rows(c, 1), W_hidden, W_proj, cell_clip, proj_clip)
        return h[:, :n], c[:, :n]
    return cell(gates(gates_x, h, W_hidden), c, W_proj, cell_clip, proj_clip)


def gates(gates_x: torch.Tensor, h: torch.Tensor, W_hidden: torch.Tensor) -> torch.Tensor:
    """Every gate's pre-activation: the input's share with the biases
    (gates_x (2, 4, n, c), from `input_gates`) plus the recurrent share
    h (2, n, p) @ W_hidden (2, 4, p, c) -> (2, 4, n, c), gates in bilm-tf's order."""
    _, _, n, c_dim = gates_x.shape
    p = h.shape[2]
    per_gate_h = h.unsqueeze(1).expand(2, N_GATES, n, p).reshape(2 * N_GATES, n, p)
    pre_activations = torch.baddbmm(
        gates_x.reshape(2 * N_GATES, n, c_dim), per_gate_h, W_hidden.view(2 * N_GATES, p, c_dim)
    )
    return pre_activations.view(2, N_GATES, n, c_dim)


def cell(
    pre_activations: torch.Tensor,
    c: torch.Tensor,
    W_proj: torch.Tensor,
    cell_clip: Optional[float],
    proj_clip: Optional[float],
) -> LayerState:
    """The cell update from the gates' pre-activations (2, 4, n, c) and the
    cell c (2, n, c): the new (h (2, n, p), c), each clipped where its clip is set."""
    i, j, f, o = pre_activations.unbind(1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
    if cell_clip:
        c = c.clamp(-cell_clip, cell_clip)
    h = torch.bmm(torch.sigmoid(o) * torch.tanh(c), W_proj)
    if proj_clip:
        h = h.clamp(-proj_clip, proj_clip)
    return h, c
