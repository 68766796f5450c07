"""The LSTM cell's update on a GPU in one kernel, for the recurrence without
gradients (inference.py).

Step by step from Python the update is eight elementwise kernels (the gates'
activation, the sigmoid's half-and-add, forget, input times new input, the
sum, the clip, the cell's tanh, the output gate), each reading and writing the
gates or the cell in GPU memory: for the original model at 512 rows, 30 passes
over 16 MiB where one kernel makes 7, and seven launches fewer a step and layer.
The kernel is compiled at run time by torch's jiterator (NVRTC), once per
process.

It does the step-by-step arithmetic in the same order, each operation rounded
on its own (``__fmul_rn``/``__fadd_rn`` are never contracted into a fused
multiply-add), so its values are those of the eight kernels; the GPU tests
compare the two.
"""

from functools import cache
from typing import Callable, Optional, Tuple

import torch

# The gates' pre-activations come as `weight_forms.inference_weights` makes them: the
# sigmoid gates' halved, so that sigmoid(x) = 1/2 + tanh(x / 2) / 2 (t / 2 exact).
_SOURCE = r"""
template <typename T> void elmo_cell_update(T i, T f, T o, T j, T c, T clip, T& cell, T& out) {
    float input_gate = 0.5f + 0.5f * tanhf(i);
    float forget_gate = 0.5f + 0.5f * tanhf(f);
    float output_gate = 0.5f + 0.5f * tanhf(o);
    float updated = __fadd_rn(__fmul_rn(c, forget_gate), __fmul_rn(input_gate, tanhf(j)));
    if (clip > 0.0f) {  /* NaN stays NaN, as torch.clamp leaves it */
        updated = updated < -clip ? -clip : (updated > clip ? clip : updated);
    }
    cell = updated;
    out = __fmul_rn(tanhf(updated), output_gate);
}
"""


def fused_cell_update(
    input_gate: torch.Tensor,
    forget_gate: torch.Tensor,
    output_gate: torch.Tensor,
    new_input: torch.Tensor,
    cell: torch.Tensor,
    clip: Optional[float],
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The updated cell and the cell's output (tanh(cell) * output gate, before
    the projection), both new float32 CUDA tensors of `cell`'s shape, from the
    gates' pre-activations (views into the gate product) and the cell before
    the step; the cell clipped to ±`clip` where it is set."""
    return _kernel()(input_gate, forget_gate, output_gate, new_input, cell, clip=float(clip or 0.0))


@cache
def _kernel() -> Callable:
    return torch.cuda.jiterator._create_multi_output_jit_fn(_SOURCE, num_outputs=2, clip=0.0)
