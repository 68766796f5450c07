"""Grouping sentences into batches of similar length, for the biLM at inference.

Whole sentences into batches (embed uses it); the layout of one batch's rows
is packing.py's, and pretraining's batches (with targets) are
`spacy_elmo.training.data.lm_batches`.
"""

from typing import List, Sequence


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> List[List[int]]:
    """The indices of `lengths` in batches of at most `batch_size`, longest first.

    A batch of similar lengths wastes nothing on padding and keeps every row
    running for most of the recurrence. `BiLM.forward` gives each sentence the
    same vectors whatever batch it is in, so this only changes the speed.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, found {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
