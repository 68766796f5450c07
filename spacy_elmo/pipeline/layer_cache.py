"""The training cache of a frozen biLM's outputs."""

import weakref
from typing import Any, Dict, Hashable, Optional, Tuple

import numpy
from spacy.tokens import Doc
from thinc.api import get_array_module
from thinc.types import Floats3d


def as_stored(layers: Floats3d, dtype: str) -> Tuple[Any, bool]:
    """`layers` (float32) in the storage `dtype`, unless float16 cannot hold
    them: (the layers as stored, whether they were kept as float32 because a
    value is beyond float16's range, where it would become inf)."""
    if numpy.dtype(dtype) != numpy.float16:
        return layers.astype(dtype, copy=False), False
    with numpy.errstate(over="ignore"):  # detected below, on the result
        stored = layers.astype(dtype)
    if bool(get_array_module(stored).isfinite(stored).all()):
        return stored, False
    return layers, True


class LayerCache:
    """Keeps the layers of docs seen in training, up to `max_bytes`.

    A frozen biLM is deterministic, so a doc met again in a later epoch needs
    no second run. Keys are the doc's token strings and sentence starts (the
    biLM reads sentences). When the budget is spent, new docs are simply not
    added: training visits every doc once an epoch, and under that access
    pattern keeping a fixed set beats evicting (an LRU would never hit).

    The layers are those of one biLM: `bind` names it before each use, and a
    cache filled from another biLM (new weights loaded) is emptied first.
    """

    def __init__(self, max_bytes: int, dtype: str = "float32"):
        self.max_bytes = max_bytes
        self.dtype = dtype
        self.n_bytes = 0
        self.hits = 0
        self.misses = 0
        self._store: Dict[Hashable, Any] = {}
        self._source: Optional[weakref.ref] = None  # the biLM the layers come from

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        self._store.clear()
        self.n_bytes = self.hits = self.misses = 0

    def bind(self, source: Any) -> None:
        """Serve the layers of `source` (the biLM): if the cache holds another's, empty it."""
        if self._source is None or self._source() is not source:
            self.clear()
            self._source = weakref.ref(source)

    @staticmethod
    def key(doc: Doc) -> Hashable:
        words = tuple(token.text for token in doc)
        if doc.has_annotation("SENT_START"):
            return words, tuple(sent.start for sent in doc.sents)
        return words, None

    def get(self, key: Hashable) -> Optional[Floats3d]:
        stored = self._store.get(key)
        if stored is None:
            self.misses += 1
            return None
        self.hits += 1
        return stored.astype("float32")

    def add(self, key: Hashable, layers: Floats3d) -> Floats3d:
        """Keep `layers` (float32) where the budget allows, and return them as
        `get` serves them, whether kept or not (rounded to the store's dtype),
        so that listeners see the same values in every epoch."""
        stored, _ = as_stored(layers, self.dtype)
        if self.n_bytes + stored.nbytes <= self.max_bytes and key not in self._store:
            self._store[key] = stored
            self.n_bytes += stored.nbytes
        return stored.astype("float32", copy=False)
