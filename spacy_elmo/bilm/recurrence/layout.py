"""The packed layout every path of the recurrence runs on, and how it is cut into steps and blocks.

Sequences come packed time-major, rows sorted longest first (as in
``torch.nn.utils.rnn.PackedSequence``): step t holds rows ``0 .. batch_sizes[t] - 1``, so only the
rows still running are computed and padding never is. Both directions lie side by side on a leading
axis of 2; the backward direction is fed time-reversed sequences, so both run as one batched
recurrence.
"""

from typing import List, NamedTuple, Sequence, Tuple

import torch

# Per layer: h (2, batch, projection_dim) and c (2, batch, lstm_dim); axis 0 is the direction.
LayerState = Tuple[torch.Tensor, torch.Tensor]

N_GATES = 4  # input, new input, forget, output: bilm-tf's order
FORGET_GATE = 2

# The input-to-gate products are computed for blocks of time steps holding at
# most this many rows, so their buffer stays small (2 * 4 * 512 * lstm_dim
# floats, 64 MiB for the original model) whatever the batch.
ROWS_PER_INPUT_BLOCK = 512

# The recurrence without gradients computes a step of fewer rows with copies of
# a row added up to this many (products.py): MKL rounds products of up to 6 rows
# by another method for some shapes (8 x 8, the smallest biLMs'), and a token's
# layers would then depend on how many rows run beside it.
MIN_STEP_ROWS = 8


class PackedSteps(NamedTuple):
    """A packed batch's time steps, as every path walks them (`PackedSteps.of`)."""

    sizes: Sequence[int]  # the number of rows running at each step, non-increasing
    offsets: List[int]  # where each step's rows start in the packed layout, and the end
    blocks: List[Tuple[int, int]]  # runs of steps whose input-to-gate products are made together

    @classmethod
    def of(cls, batch_sizes: Sequence[int]) -> "PackedSteps":
        offsets = step_offsets(batch_sizes)
        return cls(batch_sizes, offsets, input_blocks(offsets))


def step_offsets(batch_sizes: Sequence[int]) -> List[int]:
    """Where each step's rows start in the packed layout, and the end."""
    offsets = [0]
    for n in batch_sizes:
        offsets.append(offsets[-1] + n)
    return offsets


def input_blocks(offsets: List[int]) -> List[Tuple[int, int]]:
    """Split the steps into runs [first, end) of at most ROWS_PER_INPUT_BLOCK
    packed rows (or one step, if a single step has more)."""
    blocks = []
    first = 0
    n_steps = len(offsets) - 1
    for t in range(1, n_steps + 1):
        if t == n_steps or offsets[t + 1] - offsets[first] > ROWS_PER_INPUT_BLOCK:
            blocks.append((first, t))
            first = t
    return blocks


def input_scratch(inputs: torch.Tensor, steps: PackedSteps, lstm_dim: int) -> torch.Tensor:
    """One flat buffer for the input-to-gate products of every block of `steps`,
    without gradients: a fresh buffer per block (tens of MiB) costs more in page
    faults on first touch than the products' bias copy."""
    offsets = steps.offsets
    block_rows = max([MIN_STEP_ROWS] + [offsets[end] - offsets[first] for first, end in steps.blocks])
    return inputs.new_empty(2 * N_GATES * block_rows * lstm_dim)
