"""Time-major packing: how rows of different lengths go into the LSTMs.

`BiLSTMStack` takes sequences packed as ``torch.nn.utils.rnn.PackedSequence``
packs them: rows sorted longest first (ties in their given order), then step
after step the rows still running, so step t holds sorted rows
``0 .. batch_sizes[t] - 1`` and ``batch_sizes`` never increases. The biLM
(`BiLM.forward`) and pretraining (`training.data.lm_batches.collate`) both pack
with `TimeMajor`; `length_sorted_batches` (batching.py) is another thing: it
groups whole sentences into batches.
"""
from dataclasses import dataclass
from typing import List

import torch


@dataclass
class TimeMajor:
    """Where each (row, step) of a padded batch goes in the packed sequence.

    order: (rows,) the given row at each sorted position, longest first,
        ties in their given order.
    batch_sizes: rows running at each step; non-increasing, summing to n_packed.
    positions: (rows, steps) the packed position of (given row b, step t), -1
        where t is past row b's length.
    """

    order: torch.Tensor
    batch_sizes: List[int]
    positions: torch.Tensor

    @classmethod
    def of_lengths(cls, lengths: torch.Tensor, steps: int) -> "TimeMajor":
        """The packing of rows of these lengths (rows,), each at most `steps`."""
        order = torch.argsort(lengths, descending=True, stable=True)
        sorted_lengths = lengths[order]
        # valid[t, r]: sorted row r still runs at step t; numbering those cells
        # step by step, row by row, gives their packed positions.
        valid = torch.arange(steps, device=lengths.device)[:, None] < sorted_lengths[None, :]
        packed = torch.cumsum(valid.reshape(-1), 0).view(steps, -1) - 1
        positions = torch.full_like(packed.t(), -1)
        positions[order] = torch.where(valid, packed, -1).t()
        batch_sizes = [n for n in valid.sum(dim=1).tolist() if n]
        return cls(order=order, batch_sizes=batch_sizes, positions=positions)

    @property
    def n_packed(self) -> int:
        return sum(self.batch_sizes)

    def pack(self, padded: torch.Tensor) -> torch.Tensor:
        """(rows, steps, ...) in the given row order -> (n_packed, ...)."""
        valid = self.positions >= 0
        packed = padded.new_empty((self.n_packed, *padded.shape[2:]))
        packed[self.positions[valid]] = padded[valid]
        return packed


def reversed_steps(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(rows, steps) step indices that read each row backwards over its own
    length: ``length - 1 - t`` for t < length, t (padding stays) after."""
    positions = torch.arange(steps, device=lengths.device).expand(len(lengths), steps)
    return torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)
