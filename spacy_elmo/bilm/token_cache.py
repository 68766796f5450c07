"""A bounded cache of token representations, keyed on the host.

`BiLM.encode_words` keys it by the word itself; `BiLM.forward`, which is given
character ids, by the bytes of each distinct row of ids. Nothing is read back
from the device to look a key up: keys live on the host, vectors on the
model's device.
"""

import threading
from itertools import repeat
from typing import Callable, Dict, Hashable, List, Sequence

import numpy
import torch

from ..device import to_device


class TokenCache:
    """Least-recently-used store of token vectors in one preallocated tensor.

    The cache is only valid for one set of encoder weights in one arithmetic:
    a change of `weights_key` (which `BiLM` makes of the parameters' storage,
    device and dtype, and of the arithmetic) empties it. Changes of the weights
    in place are the owner's to announce with `clear` (`BiLM` does it on
    loading and training, see `BiLM._token_vectors`).

    Recency is a stamp per slot (the number of the call that last used it),
    so a lookup costs one dictionary probe per distinct key and one array
    assignment per call, and the least recently used slots are found with one
    partition when the cache is full.

    Calls from several threads take turns: a lookup (the encoding of the keys
    it misses included) runs under a lock, as do `clear` and a change of
    `max_size`, so that two lookups never take the same free slots nor read a
    slot another fills. A copy (``copy.deepcopy``) or a pickle keeps the
    size and none of the vectors, which belong to the original's weights.
    """

    def __init__(self, max_size: int):
        self._lock = threading.Lock()
        self._max_size = max_size
        self._slots: Dict[Hashable, int] = {}
        self._keys: List[Hashable] = []  # the key in each slot
        self._stamps = numpy.zeros(0, dtype=numpy.int64)  # the call that last used each slot
        self._calls = 0
        self._storage: torch.Tensor = torch.empty(0)
        self._weights_key: Hashable = None

    def __getstate__(self) -> dict:
        return {"max_size": self._max_size}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_size"])  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def max_size(self) -> int:
        """The most vectors kept; lowered below the number kept, it empties the cache."""
        return self._max_size

    @max_size.setter
    def max_size(self, value: int) -> None:
        with self._lock:
            self._max_size = value
            if len(self._keys) > value:
                self._empty()

    def clear(self) -> None:
        with self._lock:
            self._empty()

    def _empty(self) -> None:
        self._slots.clear()
        self._keys.clear()
        self._stamps = numpy.zeros(0, dtype=numpy.int64)
        self._storage = torch.empty(0)

    def lookup(
        self,
        keys: Sequence[Hashable],
        encode: Callable[[numpy.ndarray], torch.Tensor],
        weights_key: Hashable,
    ) -> torch.Tensor:
        """The vectors of distinct `keys`, encoding only those the cache misses.

        encode: the positions in `keys` of the missing ones (int64 array) ->
            their vectors (n_missing, dim), on the model's device.
        RETURNS: (len(keys), dim), row i the vector of keys[i].
        """
        if len(keys) > self._max_size:  # this call alone overflows the cache: encoded without it
            return encode(numpy.arange(len(keys)))
        with self._lock:
            return self._lookup(keys, encode, weights_key)

    def _lookup(
        self,
        keys: Sequence[Hashable],
        encode: Callable[[numpy.ndarray], torch.Tensor],
        weights_key: Hashable,
    ) -> torch.Tensor:
        """`lookup` under the lock."""
        if weights_key != self._weights_key:
            self._empty()
            self._weights_key = weights_key
        if len(keys) > self._max_size:  # max_size lowered by another thread since `lookup` checked it
            return encode(numpy.arange(len(keys)))
        self._calls += 1
        slots = numpy.fromiter(map(self._slots.get, keys, repeat(-1)), dtype=numpy.int64, count=len(keys))
        missing = numpy.flatnonzero(slots < 0)
        hits = slots[slots >= 0]
        self._stamps[hits] = self._calls
        if len(missing):
            vectors = encode(missing)
            slots[missing] = self._allocate([keys[i] for i in missing], vectors)
        return self._storage[to_device(slots, self._storage.device)]

    def _allocate(self, keys: List[Hashable], vectors: torch.Tensor) -> numpy.ndarray:
        """Slots for `keys` (none of them cached), filled with `vectors`; the
        least recently used slots are reused once the cache is full."""
        n_used = len(self._keys)
        n_new = min(len(keys), self.max_size - n_used)
        capacity = self._storage.shape[0]
        if capacity < n_used + n_new or self._storage.device != vectors.device:
            capacity = min(self.max_size, max(1024, 2 * (n_used + n_new)))
            # A normal tensor even under inference mode, so that a call outside it may write it.
            with torch.inference_mode(False):
                storage = vectors.new_empty(capacity, vectors.shape[1])
            if n_used and self._storage.device == vectors.device:
                storage[:n_used] = self._storage[:n_used]
            self._storage = storage
            stamps = numpy.zeros(capacity, dtype=numpy.int64)
            stamps[:n_used] = self._stamps[:n_used]
            self._stamps = stamps
        slots = numpy.arange(n_used, n_used + n_new)
        n_evicted = len(keys) - n_new
        if n_evicted:  # the oldest slots not used by this call (there are enough: len(keys) <= max_size)
            stamps = self._stamps[:n_used]
            oldest = numpy.argpartition(stamps, n_evicted - 1)[:n_evicted]
            for slot in oldest.tolist():
                del self._slots[self._keys[slot]]
            slots = numpy.concatenate([slots, oldest])
        self._slots.update(zip(keys, slots.tolist()))
        self._keys.extend(keys[:n_new])  # slots n_used, n_used + 1, ...
        for key, slot in zip(keys[n_new:], slots[n_new:].tolist()):
            self._keys[slot] = key
        self._stamps[slots] = self._calls
        self._storage[to_device(slots, vectors.device)] = vectors
        return slots


def distinct_rows(rows: torch.Tensor) -> tuple:
    """The distinct rows of character ids (n, max_chars) as bytes keys, the
    index of each one's first occurrence, and for every row the index of its
    distinct row (the keys of `BiLM.forward`, which is given ids, not words)."""
    array = numpy.ascontiguousarray(rows.to("cpu", torch.int16).numpy())
    index: Dict[bytes, int] = {}
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
