"""A bounded cache of token representations, keyed by the token's character ids."""
from collections import OrderedDict
from typing import Callable, Hashable, List, Tuple

import numpy
import torch


class TokenCache:
    """Least-recently-used store of token vectors in one preallocated tensor.

    The cache is only valid for one set of encoder weights in one arithmetic:
    a change of `weights_key` (which `BiLM` makes of the parameters' storage,
    device and dtype, and of the arithmetic) empties it. Changes of the weights
    in place are the owner's to announce with `clear` (`BiLM` does it on
    loading and training, see `BiLM._distinct_token_vectors`).
    """

    def __init__(self, max_size: int):
        self.max_size = max_size
        self._slots: "OrderedDict[bytes, int]" = OrderedDict()
        self._storage: torch.Tensor = torch.empty(0)
        self._weights_key: Hashable = None

    def __len__(self) -> int:
        return len(self._slots)

    def clear(self) -> None:
        self._slots.clear()
        self._storage = torch.empty(0)

    def encode(
        self,
        rows: torch.Tensor,
        encoder: Callable[[torch.Tensor], torch.Tensor],
        weights_key: Hashable,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Vectors of the distinct rows of `rows`, through the cache.

        rows: (n, max_chars) character ids of real tokens.
        RETURNS: (vectors (n_distinct, dim), inverse (n,)) with
            ``vectors[inverse]`` the vector of each input row.
        """
        if weights_key != self._weights_key:
            self.clear()
            self._weights_key = weights_key
        keys, first, inverse = _distinct_rows(rows)
        inverse_t = torch.as_tensor(inverse, device=rows.device)
        if len(keys) > self.max_size:  # this batch alone overflows the cache
            return encoder(rows[torch.as_tensor(first, device=rows.device)]), inverse_t
        slots = [self._slots.get(k, -1) for k in keys]
        for key, slot in zip(keys, slots):
            if slot >= 0:
                self._slots.move_to_end(key)
        missing = [i for i, slot in enumerate(slots) if slot < 0]
        if missing:
            vectors = encoder(rows[torch.as_tensor(first[missing], device=rows.device)])
            for i, slot in zip(missing, self._allocate([keys[i] for i in missing], vectors)):
                slots[i] = slot
        return self._storage[torch.as_tensor(slots, device=self._storage.device)], inverse_t

    def _allocate(self, keys: List[bytes], vectors: torch.Tensor) -> List[int]:
        needed = len(self._slots) + len(keys)
        if self._storage.shape[0] < min(needed, self.max_size) or self._storage.device != vectors.device:
            capacity = min(self.max_size, max(1024, 2 * needed))
            storage = vectors.new_empty(capacity, vectors.shape[1])
            if self._storage.numel() and self._storage.device == vectors.device:
                storage[: self._storage.shape[0]] = self._storage
            self._storage = storage
        slots = []
        for key in keys:
            if len(self._slots) < self.max_size:
                slot = len(self._slots)
            else:
                _, slot = self._slots.popitem(last=False)
            self._slots[key] = slot
            slots.append(slot)
        self._storage[torch.as_tensor(slots, device=vectors.device)] = vectors
        return slots


def _distinct_rows(rows: torch.Tensor) -> Tuple[List[bytes], numpy.ndarray, numpy.ndarray]:
    """The distinct rows as bytes keys, the index of each one's first
    occurrence, and for every row the index of its distinct row."""
    array = numpy.ascontiguousarray(rows.to("cpu", torch.int16).numpy())
    index: "dict[bytes, int]" = {}
    first: List[int] = []
    inverse = numpy.empty(array.shape[0], dtype=numpy.int64)
    for i, row in enumerate(array):
        key = row.tobytes()
        j = index.get(key)
        if j is None:
            j = index[key] = len(first)
            first.append(i)
        inverse[i] = j
    return list(index), numpy.asarray(first, dtype=numpy.int64), inverse
