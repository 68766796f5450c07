"""One LSTM layer with projection whose backward pass is written out by hand.

The step-by-step path (step.py) under autograd records about fifteen
operations per step, and their backward pass pays for the step's small size:
the gradient of each step's slice of the input-to-gate products is scattered
into a zero-filled copy of the whole block, the per-gate copies of the
recurrent state are summed back, and the weight gradients come as one small
product per step (a third of a pretraining step on a 2-core CPU).

`lstm_layer` computes the same function with the same weights, and its
backward pass does per step only what must be sequential (the gradient
through the projection and the recurrent weights, and the cell's elementwise
work); the weight gradients and the gradient of the input are then four large
products over all packed rows at once. The forward pass keeps what the
backward pass needs, and nothing more: the activated gates, the cell before
its clip, tanh of the clipped cell and the projection before its clip; the
backward pass overwrites those buffers as it goes (the gates with their
gradients, tanh(c) with the product it fed to the projection), so the memory
of a layer is that of its forward pass.

Conventions as in layout.py: both directions side by side on a leading axis,
rows packed time-major and sorted longest first, so step t runs rows
``0 .. batch_sizes[t] - 1``; gates in bilm-tf's order (input, new input,
forget, output) in the weights. Inside, each row's four gates lie side by
side in one (4 * lstm_dim) vector, ordered (input, forget, output, new
input), so that the three sigmoid gates are one slice and each direction's
recurrent product is one (rows, p) x (p, 4 * lstm_dim) matrix product.
`tests/bilm/test_lstm_backward.py` checks values and gradients against
autograd through the step-by-step path.
"""

from typing import List, Optional, Sequence

import torch

from .layout import step_offsets

# bilm-tf's gate order is (input, new input, forget, output); inside this
# module it is (input, forget, output, new input).
INSIDE_ORDER = (0, 2, 3, 1)
TO_WEIGHTS_ORDER = (0, 3, 1, 2)  # inside position of each of bilm-tf's gates


def lstm_layer(
    x: torch.Tensor,
    W_input: torch.Tensor,
    W_hidden: torch.Tensor,
    bias: torch.Tensor,
    forget_bias: torch.Tensor,
    W_proj: torch.Tensor,
    batch_sizes: Sequence[int],
    cell_clip: Optional[float],
    proj_clip: Optional[float],
    product_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """One layer of both directions from the zero state, as the step-by-step
    path computes it (before the skip connection).

    x: (2, n_packed, p), packed time-major; W_input and W_hidden
    (2, 4, p, c); bias (2, 4, c); forget_bias (4, c), not trained; W_proj
    (2, c, p); clips of 0 or None mean none. product_dtype: the matrix
    products' inputs in this type (torch.bfloat16 under autocast), their
    results and everything else in float32 (the gates, the cell, the state;
    float64 throughout for float64 inputs, as the tests use).
    RETURNS: (2, n_packed, p), float32 (float64 for float64 inputs).
    """
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    return _ProjectedLSTM.apply(
        x,
        W_input,
        W_hidden,
        bias,
        forget_bias,
        W_proj,
        list(batch_sizes),
        float(cell_clip or 0),
        float(proj_clip or 0),
        work,
        product_dtype or work,
    )


def _inside(W: torch.Tensor) -> torch.Tensor:
    """(2, 4, p, c) in bilm-tf's gate order -> (2, p, 4 * c) in the inside order."""
    two, _, p, c = W.shape
    return W[:, INSIDE_ORDER].permute(0, 2, 1, 3).reshape(two, p, 4 * c)


def _outside(grad: torch.Tensor, p: int) -> torch.Tensor:
    """The inverse of `_inside` for a gradient: (2, p, 4 * c) -> (2, 4, p, c)."""
    two, _, four_c = grad.shape
    return grad.view(two, p, 4, four_c // 4).permute(0, 2, 1, 3)[:, TO_WEIGHTS_ORDER].contiguous()


def _within(x: torch.Tensor, clip: float) -> torch.Tensor:
    """Where a clip to [-clip, clip] lets the gradient through (both bounds
    included, as ``torch.clamp``'s gradient)."""
    return (x >= -clip) & (x <= clip)


def _product(a: torch.Tensor, b: torch.Tensor, work: torch.dtype) -> torch.Tensor:
    """a @ b (batched), `a` cast to `b`'s type, the result in `work`."""
    return torch.bmm(a.to(b.dtype), b).to(work)


class _ProjectedLSTM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, W_input, W_hidden, bias, forget_bias, W_proj, batch_sizes, cell_clip, proj_clip, work, low):
        with torch.autocast(x.device.type, enabled=False):  # the types are chosen here
            _, n_packed, p = x.shape
            c_dim = W_input.shape[3]
            offsets = step_offsets(batch_sizes)
            Wi, Wh, Wp = _inside(W_input).to(low), _inside(W_hidden).to(low), W_proj.to(low)
            # Every row's input-to-gate products at once; each step then adds its
            # recurrent share and activates its gates in place.
            b = (bias + forget_bias)[:, INSIDE_ORDER].reshape(2, 1, 4 * c_dim).to(work)
            if low == work:
                gates = torch.baddbmm(b, x, Wi)  # (2, n_packed, 4c)
            else:
                gates = _product(x, Wi, work).add_(b)
            cells = gates.new_empty(2, n_packed, c_dim)  # the cell before its clip
            tanh_cells = gates.new_empty(2, n_packed, c_dim)  # tanh of the clipped cell
            projected = gates.new_empty(2, n_packed, p)  # the projection before its clip
            out = gates.new_empty(2, n_packed, p)
            h = gates.new_zeros(2, batch_sizes[0], p)
            c = gates.new_zeros(2, batch_sizes[0], c_dim)
            for t, n in enumerate(batch_sizes):
                rows = slice(offsets[t], offsets[t + 1])
                g = gates[:, rows]
                if low == work:
                    g.baddbmm_(h[:, :n], Wh)
                else:
                    g += _product(h[:, :n], Wh, work)
                g[:, :, : 3 * c_dim].sigmoid_()
                g[:, :, 3 * c_dim :].tanh_()
                i, f, o, j = g.split(c_dim, dim=2)
                raw = cells[:, rows]
                torch.mul(f, c[:, :n], out=raw)
                raw.addcmul_(i, j)
                c = raw.clamp(-cell_clip, cell_clip) if cell_clip else raw
                tanh_c = tanh_cells[:, rows]
                torch.tanh(c, out=tanh_c)
                h_raw = _product(o * tanh_c, Wp, work)
                projected[:, rows] = h_raw
                h = h_raw.clamp(-proj_clip, proj_clip) if proj_clip else h_raw
                out[:, rows] = h
        ctx.save_for_backward(x, Wi, Wh, Wp, gates, cells, tanh_cells, projected, out)
        ctx.batch_sizes, ctx.offsets = batch_sizes, offsets
        ctx.clips, ctx.work = (cell_clip, proj_clip), work
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, Wi, Wh, Wp, gates, cells, tanh_cells, projected, out = ctx.saved_tensors
        batch_sizes, offsets, work = ctx.batch_sizes, ctx.offsets, ctx.work
        cell_clip, proj_clip = ctx.clips
        p, c_dim = x.shape[2], Wp.shape[1]
        Wp_t, Wh_t = Wp.transpose(1, 2), Wh.transpose(1, 2)
        grad_out = grad_out.to(work)
        grad_h = grad_c = None  # reaching step t from step t + 1: rows 0 .. batch_sizes[t + 1] - 1
        with torch.autocast(x.device.type, enabled=False):
            for t in reversed(range(len(batch_sizes))):
                n = batch_sizes[t]
                rows = slice(offsets[t], offsets[t + 1])
                dh = grad_out[:, rows].clone()
                if grad_h is not None:
                    dh[:, : grad_h.shape[1]] += grad_h
                if proj_clip:
                    dh.mul_(_within(projected[:, rows], proj_clip))
                projected[:, rows] = dh  # kept for W_proj's gradient
                g = gates[:, rows]
                i, f, o, j = g.split(c_dim, dim=2)
                tanh_c = tanh_cells[:, rows]
                d_hidden = _product(dh, Wp_t, work)  # d(o * tanh(c))
                dc = d_hidden * o * (1 - tanh_c * tanh_c)
                if grad_c is not None:
                    dc[:, : grad_c.shape[1]] += grad_c
                if cell_clip:
                    dc.mul_(_within(cells[:, rows], cell_clip))
                if t > 0:
                    c_prev = cells[:, offsets[t - 1] : offsets[t - 1] + n]
                    c_prev = c_prev.clamp(-cell_clip, cell_clip) if cell_clip else c_prev
                else:
                    c_prev = torch.zeros_like(dc)
                d_gates = torch.cat(
                    [
                        dc * j * i * (1 - i),
                        dc * c_prev * f * (1 - f),
                        d_hidden * tanh_c * o * (1 - o),
                        dc * i * (1 - j * j),
                    ],
                    dim=2,
                )
                grad_c = dc * f
                tanh_c.mul_(o)  # now the projection's input, for W_proj's gradient
                g.copy_(d_gates)  # the gates are not needed any more: their gradients take their place
                grad_h = _product(d_gates, Wh_t, work)
            d_gates, proj_inputs, d_projected = gates, tanh_cells, projected
            low = Wi.dtype
            grad_x = _product(d_gates, Wi.transpose(1, 2), x.dtype) if ctx.needs_input_grad[0] else None
            d_gates_low = d_gates.to(low)
            grad_Wi = _outside(_product(x.transpose(1, 2), d_gates_low, work), p)
            previous = _previous_states(out, batch_sizes, offsets).transpose(1, 2)
            grad_Wh = _outside(_product(previous, d_gates_low, work), p)
            grad_bias = d_gates.sum(dim=1).view(2, 4, c_dim)[:, TO_WEIGHTS_ORDER].contiguous()
            grad_W_proj = _product(proj_inputs.transpose(1, 2), d_projected.to(low), work)
        return grad_x, grad_Wi, grad_Wh, grad_bias, None, grad_W_proj, None, None, None, None, None


def _previous_states(out: torch.Tensor, batch_sizes: List[int], offsets: List[int]) -> torch.Tensor:
    """The recurrent input of every packed row: the row's output at the
    previous step, zeros at the first. (2, n_packed, p)."""
    previous = torch.zeros_like(out)
    for t in range(1, len(batch_sizes)):
        n = batch_sizes[t]
        previous[:, offsets[t] : offsets[t] + n] = out[:, offsets[t - 1] : offsets[t - 1] + n]
    return previous
