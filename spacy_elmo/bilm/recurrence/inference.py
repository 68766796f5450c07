"""The recurrence without gradients, in float32: each layer in place on buffers made once per layer.

The same arithmetic as the step-by-step path (step.py), with fewer operations a step: the gates'
product (in either form of `weight_forms.inference_weights`), one tanh over every gate (torch's
tanh gives the same bits in its vector and scalar paths, its sigmoid does not, so a token's values
do not depend on where its row falls), the sigmoid gates' 1/2 + t/2 (t/2 exact), the cell update,
the output and the clips (on `RecurrencePaths.fused_cell_devices`, one kernel from the
pre-activations to the cell's output, cell_kernel.py); each step's output is written straight into
the layer's output, where the next step reads it. A step of fewer than MIN_STEP_ROWS rows runs with
copies of a row added, which are dropped (layout.py).
"""

from typing import List, NamedTuple, Optional, Sequence, Tuple

import torch

from ..products import pad_rows
from .cell_kernel import fused_cell_update
from .layout import MIN_STEP_ROWS, N_GATES, LayerState, PackedSteps, input_scratch
from .weight_forms import InferenceWeights, Stack


def run_layers(
    stack: Stack,
    inputs: torch.Tensor,
    batch_sizes: List[int],
    weights: Optional[List[InferenceWeights]] = None,
    states: Optional[List[LayerState]] = None,
) -> List[torch.Tensor]:
    """Every layer's output (2, n_packed, p), layer after layer, as
    `BiLSTMStack.forward` gives them.

    weights: every layer's `BiLSTMStack.inference_weights` (made here when None).
    states: every layer's (h, c) for all ``batch_sizes[0]`` rows, at least
        MIN_STEP_ROWS of them, to start from (the zero state when None),
        updated in place: c for every row (for the last step's rows where the
        cell is updated in one kernel), h for the last step's rows (its output
        before any skip connection).
    """
    steps = PackedSteps.of(batch_sizes)
    scratch = input_scratch(inputs, steps, stack.W_input[0].shape[3])
    fused = inputs.device.type in stack.paths.fused_cell_devices and inputs.dtype == torch.float32
    outputs: List[torch.Tensor] = []
    x = inputs
    for layer in range(stack.n_layers):
        out = run_layer(
            x,
            steps,
            scratch,
            weights[layer] if weights is not None else stack.inference_weights(layer),
            (stack.cell_clip, stack.proj_clip),
            stack.gate_scale,
            fused,
            states[layer] if states is not None else None,
        )
        if states is not None:
            states[layer][0][:, : batch_sizes[-1]].copy_(out[:, steps.offsets[-2] :])
        if stack.use_skip_connections and layer > 0:
            out += x
        outputs.append(out)
        x = out
    return outputs


class _Layer(NamedTuple):
    """What every step of one layer reads."""

    W_hidden: torch.Tensor
    W_proj: torch.Tensor
    gate_scale: torch.Tensor  # (1, 4, 1, 1): 1/2 for the sigmoid gates, 1 for the new input
    half: torch.Tensor  # 1/2, on the layer's device
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    fused: bool  # the cell updated in one kernel
    per_gate: bool  # the per-gate form of `inference_weights`


def run_layer(
    x: torch.Tensor,
    steps: PackedSteps,
    scratch: torch.Tensor,
    weights: InferenceWeights,
    clips: Tuple[Optional[float], Optional[float]],
    gate_scale: torch.Tensor,
    fused: bool,
    state: Optional[LayerState] = None,
) -> torch.Tensor:
    """One layer from the zero state or `state`, whose cell is updated in place
    (step by step by the eight kernels, at the end where `fused`).

    x: (2, n_packed, p) -> (2, n_packed, p). scratch: `input_scratch`'s buffer;
    clips: (cell_clip, proj_clip); fused: the cell updated in one kernel.
    """
    W_input, W_hidden, bias, W_proj = weights
    p, c_dim = W_proj.shape[2], W_proj.shape[1]
    per_gate = W_hidden.shape[0] == 2 * N_GATES
    rows = max(steps.sizes[0], MIN_STEP_ROWS)
    out = x.new_empty(x.shape)
    if state is None:
        h, c = x.new_zeros(2, rows, p), x.new_zeros(2, rows, c_dim)
    else:
        h, c = state
    views = _ViewsByRows(x, rows, p, c_dim, per_gate, fused, c)
    layer = _Layer(W_hidden, W_proj, gate_scale, x.new_full((), 0.5), *clips, fused, per_gate)
    sizes, offsets = steps.sizes, steps.offsets
    step_outputs = out.split(sizes, dim=1)  # every step's rows, in one call
    for first, end in steps.blocks:
        step_inputs = _input_gates(
            x[:, offsets[first] : offsets[end]], sizes[first:end], scratch, W_input, bias, gate_scale, c_dim, per_gate
        )
        h, c = _run_steps(layer, views, sizes[first:end], step_inputs, step_outputs[first:end], h, c)
    if fused and state is not None:  # the running rows' cell back into the state's
        state[1][:, : c.shape[1]].copy_(c)
    return out


def _input_gates(
    x: torch.Tensor,
    sizes: Sequence[int],
    scratch: torch.Tensor,
    W_input: torch.Tensor,
    bias: torch.Tensor,
    gate_scale: torch.Tensor,
    c_dim: int,
    per_gate: bool,
) -> Tuple[torch.Tensor, ...]:
    """The input-to-gate products and biases of a block of steps, into `scratch`:
    each step's (2, 4, n, c) per gate, (2, n, 4 * c) wide, for x (2, rows, p)
    the block's packed rows and `sizes` its steps' row counts."""
    block_rows = x.shape[1]
    if block_rows < MIN_STEP_ROWS:
        x = pad_rows(x, 1, MIN_STEP_ROWS)
    n_rows = x.shape[1]
    gates_x = scratch[: 2 * N_GATES * n_rows * c_dim]
    if per_gate:  # each gate's product of the input, halved for the sigmoid gates
        gates_x = gates_x.view(2 * N_GATES, n_rows, c_dim)
        torch.baddbmm(bias, torch.mul(x.unsqueeze(1), gate_scale).flatten(0, 1), W_input, out=gates_x)
        return gates_x.view(2, N_GATES, n_rows, c_dim)[:, :, :block_rows].split(sizes, dim=2)
    gates_x = gates_x.view(2, n_rows, N_GATES * c_dim)
    torch.baddbmm(bias, x, W_input, out=gates_x)
    return gates_x[:, :block_rows].split(sizes, dim=1)


def _run_steps(
    layer: _Layer,
    views: "_ViewsByRows",
    sizes: Sequence[int],
    step_inputs: Sequence[torch.Tensor],
    step_outputs: Sequence[torch.Tensor],
    h: torch.Tensor,
    c: torch.Tensor,
) -> LayerState:
    """A block's steps: each step's output into `step_outputs`, from its
    input-to-gate products `step_inputs` and the state (h, c) the previous
    step left; RETURNS the state the last step leaves."""
    W_hidden, W_proj, scale, half, cell_clip, proj_clip, fused, per_gate = layer
    for n, step_x, step_out in zip(sizes, step_inputs, step_outputs):
        m = max(n, MIN_STEP_ROWS)  # see MIN_STEP_ROWS: rows beyond n are dropped
        (
            product,
            g,
            input_gate,
            new_input,
            forget_gate,
            output_gate,
            sigmoid_gates,
            scaled,
            cell,
            cell_out,
            projected,
        ) = views[m]
        if n < MIN_STEP_ROWS:
            step_x = pad_rows(step_x, 2 if per_gate else 1, MIN_STEP_ROWS)
            h = pad_rows(h[:, :n], 1, MIN_STEP_ROWS)
        elif h.shape[1] != n:
            h = h[:, :n]
        if per_gate:  # the hidden state once per gate, halved for the sigmoid gates
            torch.mul(h.unsqueeze(1), scale, out=scaled)
            torch.baddbmm(step_x.flatten(0, 1), scaled.flatten(0, 1), W_hidden, out=product)
        else:
            torch.baddbmm(step_x, h, W_hidden, out=product)
        if fused:
            c, cell_out = fused_cell_update(input_gate, forget_gate, output_gate, new_input, c[:, :m], cell_clip)
        else:
            g.tanh_()
            for sigmoid in sigmoid_gates:  # 1/2 + t/2: t/2 is exact
                torch.add(half, sigmoid, alpha=0.5, out=sigmoid)
            cell.mul_(forget_gate)
            torch.mul(input_gate, new_input, out=cell_out)
            cell.add_(cell_out)
            if cell_clip:
                cell.clamp_(-cell_clip, cell_clip)
            torch.tanh(cell, out=cell_out)
            cell_out.mul_(output_gate)
        if n < MIN_STEP_ROWS or projected is not None:
            h = torch.bmm(cell_out, W_proj, out=projected)
            if proj_clip:
                h.clamp_(-proj_clip, proj_clip)
            step_out.copy_(h[:, :n])
        else:
            h = step_out
            torch.bmm(cell_out, W_proj, out=h)
            if proj_clip:
                h.clamp_(-proj_clip, proj_clip)
    return h, c


class _StepViews(NamedTuple):
    """A layer's step buffers as a step of m rows uses them."""

    product: torch.Tensor  # the gates' pre-activations as the recurrent product writes them
    gates: torch.Tensor  # the same memory as one tensor, activated in place
    input_gate: torch.Tensor
    new_input: torch.Tensor
    forget_gate: torch.Tensor
    output_gate: torch.Tensor
    sigmoid_gates: Tuple[torch.Tensor, ...]  # slices over the sigmoid gates, for 1/2 + t/2
    scaled_h: Optional[torch.Tensor]  # per gate: the hidden state once per gate, halved for the sigmoid gates
    cell: torch.Tensor  # the layer's cell, updated in place by the eight kernels
    cell_out: Optional[torch.Tensor]  # tanh(cell) * output gate, by the eight kernels
    projected: Optional[torch.Tensor]  # the projection, on a CPU


class _ViewsByRows(dict):
    """A layer's step buffers, made once per layer, and their `_StepViews` for
    m rows, made at the first step of m rows (the rows of later steps are
    never more: ``views[m]``)."""

    def __init__(self, x: torch.Tensor, rows: int, p: int, c_dim: int, per_gate: bool, fused: bool, cell: torch.Tensor):
        super().__init__()
        self.p, self.c_dim, self.per_gate, self.cell = p, c_dim, per_gate, cell
        self.gates = x.new_empty(2 * N_GATES * rows * c_dim)
        self.scaled_h = x.new_empty(2 * N_GATES * rows * p) if per_gate else None
        # In one kernel (cell_kernel.py) the cell is a new tensor each step, and
        # so is the cell's output: no buffer for it; the eight kernels update
        # the cell in place.
        self.cell_out = None if fused else x.new_empty(2 * rows * c_dim)
        # On a CPU the projection goes into a contiguous buffer, then into the
        # layer's output: MKL computes a product into a strided output one
        # matrix at a time, each cut over the threads (products.py).
        self.projected = x.new_empty(2 * rows * p) if x.device.type == "cpu" else None

    def __missing__(self, m: int) -> _StepViews:
        p, c_dim = self.p, self.c_dim
        g = self.gates[: 2 * N_GATES * m * c_dim]
        if self.per_gate:
            g = g.view(2, N_GATES, m, c_dim)
            i, j, f, o = g.unbind(1)
            product, sigmoid_gates = g.view(2 * N_GATES, m, c_dim), (i, g[:, 2:])
            scaled_h = self.scaled_h[: 2 * N_GATES * m * p].view(2, N_GATES, m, p)
        else:
            g = g.view(2, m, N_GATES * c_dim)
            i, f, o, j = g.split(c_dim, dim=2)
            product, sigmoid_gates, scaled_h = g, (g[:, :, : 3 * c_dim],), None
        cell_out = None if self.cell_out is None else self.cell_out[: 2 * m * c_dim].view(2, m, c_dim)
        projected = None if self.projected is None else self.projected[: 2 * m * p].view(2, m, p)
        views = self[m] = _StepViews(
            product, g, i, j, f, o, sigmoid_gates, scaled_h, self.cell[:, :m], cell_out, projected
        )
        return views
