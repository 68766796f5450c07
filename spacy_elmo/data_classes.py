"""What the `elmo` component leaves on a Doc, and how it travels (DocBin, multiprocessing)."""

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy
import srsly
from thinc.api import get_array_module
from thinc.types import Floats1d, Floats3d

MSGPACK_KEY = "__spacy_elmo_doc_data__"


@dataclass
class ElmoDocData:
    """All biLM layers for one Doc's tokens.

    layers: (n_layers, n_tokens, width), n_layers = L + 1, layer 0 being the
        context-insensitive token representation. float32 or float16, on the
        device the component ran on.
    mix: (n_layers,) the fixed weights that `Token/Span/Doc._.elmo_vector`
        apply; they sum to 1 for the averaging mixes.
    vector_hooks: whether ``.vector`` and ``.similarity()`` of the doc should
        use these layers (the component's `set_vector_hooks`); it travels with
        the data, so the hooks can be put back on a deserialised doc.
    token_offsets: (n_tokens, 2) int32, each token's character offset and
        length in the doc the layers were computed for: a doc retokenized
        since then no longer matches them (see `extensions.check_tokens`).
        None where the data does not record them (then only the number of
        tokens is checked).
    sentence_starts: (n_sentences,) int32, the tokens where the biLM started
        reading a sentence ([0] for a doc read as one text, before windowing):
        what a listener's copy after `nlp.replace_listeners` reads the doc by.
        None where the data does not record them.
    """

    layers: Floats3d
    mix: Floats1d
    vector_hooks: bool = False
    token_offsets: Optional[numpy.ndarray] = None
    sentence_starts: Optional[numpy.ndarray] = None

    @classmethod
    def empty(cls, n_layers: int, width: int, n_tokens: int = 0) -> "ElmoDocData":
        return cls(
            layers=numpy.zeros((n_layers, n_tokens, width), dtype="float32"),
            mix=numpy.full((n_layers,), 1.0 / n_layers, dtype="float32"),
        )

    @property
    def n_layers(self) -> int:
        return int(self.layers.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.layers.shape[1])

    @property
    def width(self) -> int:
        return int(self.layers.shape[2])

    def mixed(self, start: int = 0, end: Optional[int] = None) -> Any:
        """The fixed mix of the layers for tokens start..end: (n, width) float32."""
        xp = get_array_module(self.layers)
        layers = self.layers[:, start:end].astype("float32")
        return xp.tensordot(xp.asarray(self.mix, dtype="float32"), layers, axes=1)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "layers": _to_numpy(self.layers),
            "mix": _to_numpy(self.mix),
            "vector_hooks": self.vector_hooks,
            "token_offsets": self.token_offsets,
            "sentence_starts": self.sentence_starts,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ElmoDocData":
        return cls(
            layers=data["layers"],
            mix=data["mix"],
            vector_hooks=bool(data.get("vector_hooks", False)),
            token_offsets=data.get("token_offsets"),
            sentence_starts=data.get("sentence_starts"),
        )


def _to_numpy(array: Any) -> numpy.ndarray:
    return array.get() if hasattr(array, "get") and not isinstance(array, numpy.ndarray) else array


@srsly.msgpack_encoders("spacy_elmo_doc_data")
def serialize_elmo_doc_data(obj, chain=None):
    if isinstance(obj, ElmoDocData):
        return {MSGPACK_KEY: obj.to_dict()}
    return obj if chain is None else chain(obj)


@srsly.msgpack_decoders("spacy_elmo_doc_data")
def deserialize_elmo_doc_data(obj, chain=None):
    if isinstance(obj, dict) and MSGPACK_KEY in obj:
        return ElmoDocData.from_dict(obj[MSGPACK_KEY])
    return obj if chain is None else chain(obj)
