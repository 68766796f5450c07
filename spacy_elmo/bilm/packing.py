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
from typing import List, Optional

import numpy
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


@dataclass
class SentencePacking:
    """The packing of a batch of sentences given as word indices, made on the
    host with NumPy (`BiLM.encode_words`): the same layout as `TimeMajor` over
    the rows ``<S> words </S>``, with ``<S>`` and ``</S>`` words 0 and 1.

    inputs: (2, n_packed) the word at each packed position, direction 0 reading
        each row forwards, direction 1 backwards.
    batch_sizes: rows running at each step.
    outputs: (2, n_tokens) where each real token's output is in each direction's
        packed output, tokens sentence after sentence.
    predictions: only when asked for (``of(..., predictions=True)``), the two
        language models' predictions, ``n_tokens + rows`` per direction, row
        after row in the row's own order: direction 0 predicts ``w1 … wn </S>``
        and direction 1 ``<S> w1 … wn`` (what each reads next), every one from the
        output at the position its direction reads just before. (2, 2,
        n_tokens + rows): ``[0]`` those packed positions, ``[1]`` the words
        predicted (0 ``<S>``, 1 ``</S>``, else the token's word).
    """

    inputs: numpy.ndarray
    batch_sizes: List[int]
    outputs: numpy.ndarray
    predictions: Optional[numpy.ndarray] = None

    @classmethod
    def of(cls, index: numpy.ndarray, lengths: numpy.ndarray, predictions: bool = False) -> "SentencePacking":
        """index: (n_tokens,) every token's word, sentence after sentence;
        lengths: (rows,) each sentence's number of tokens; predictions: also
        lay out the language models' predictions."""
        steps = lengths + 2  # with <S> and </S>
        rows = len(steps)
        order = numpy.argsort(-steps, kind="stable")
        rank = numpy.empty(rows, dtype=numpy.int64)
        rank[order] = numpy.arange(rows)
        n_steps = int(steps.max(initial=0))
        batch_sizes = numpy.bincount(steps, minlength=n_steps + 1)[::-1].cumsum()[::-1][1:]
        offsets = numpy.concatenate([[0], numpy.cumsum(batch_sizes)])
        # Every (row, step) cell, row after row: step t of row b sits at
        # offsets[t] + rank[b] going forwards, offsets[steps_b - 1 - t] + rank[b] backwards.
        row = numpy.repeat(numpy.arange(rows), steps)
        t = numpy.arange(len(row)) - numpy.repeat(numpy.cumsum(steps) - steps, steps)
        forward = offsets[t] + rank[row]
        backward = offsets[steps[row] - 1 - t] + rank[row]
        words = numpy.ones(len(row), dtype=numpy.int64)  # </S> where no token is
        words[t == 0] = 0
        is_token = (t > 0) & (t < steps[row] - 1)
        words[is_token] = index
        inputs = numpy.empty((2, len(row)), dtype=numpy.int64)
        inputs[0, forward] = words
        inputs[1, backward] = words
        outputs = numpy.stack([forward[is_token], backward[is_token]])
        packing = cls(inputs=inputs, batch_sizes=batch_sizes.tolist(), outputs=outputs)
        if predictions:
            # Forwards, the cell at step t > 0 is predicted from step t - 1;
            # backwards, the cell at step t < steps - 1 from step t + 1.
            forwards = numpy.flatnonzero(t > 0)
            backwards = numpy.flatnonzero(t < steps[row] - 1)
            packing.predictions = numpy.stack(
                [
                    numpy.stack([forward[forwards - 1], backward[backwards + 1]]),
                    numpy.stack([words[forwards], words[backwards]]),
                ]
            )
        return packing
