"""The ``._.elmo`` extensions and, optionally, ELMo-backed ``.vector``/``.similarity()``.

``doc._.elmo`` is an `ElmoDocData` once the `elmo` component has run, and
``None`` before. The ``elmo_vector`` getters apply the component's fixed mix
(``vector_mix``): a token's vector, and the mean over a span's or doc's tokens.
They return ``None`` for a doc the component has not processed (never zeros
that look like real vectors), and an empty span or doc gives ``None`` too.
"""
from typing import Any, List, Optional, Union

import numpy
from spacy.tokens import Doc, Span, Token
from thinc.api import get_array_module

from .errors import ElmoError, Errors

MixSpec = Union[str, int, List[float]]


def install_extensions() -> None:
    """Register the extensions (safe to call more than once)."""
    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", default=None)
    for cls, getter in ((Doc, _doc_vector), (Span, _span_vector), (Token, _token_vector)):
        if not cls.has_extension("elmo_vector"):
            cls.set_extension("elmo_vector", getter=getter)


def fixed_mix_weights(spec: MixSpec, n_layers: int) -> numpy.ndarray:
    """Layer weights for a fixed mix: "average", "top", a layer index, or explicit weights."""
    if spec == "average":
        return numpy.full((n_layers,), 1.0 / n_layers, dtype="float32")
    weights = numpy.zeros((n_layers,), dtype="float32")
    if spec == "top":
        weights[-1] = 1.0
    elif isinstance(spec, int) and not isinstance(spec, bool) and -n_layers <= spec < n_layers:
        weights[spec] = 1.0
    elif isinstance(spec, (list, tuple)) and len(spec) == n_layers and all(
        isinstance(w, (int, float)) and not isinstance(w, bool) for w in spec
    ):
        weights[:] = spec
    else:
        raise ElmoError("E401", Errors.E401.format(found=spec, n_layers=n_layers))
    return weights


def _token_vector(token: Token) -> Optional[Any]:
    data = token.doc._.elmo
    return None if data is None else data.mixed(token.i, token.i + 1)[0]


def _span_vector(span: Span) -> Optional[Any]:
    data = span.doc._.elmo
    if data is None or len(span) == 0:
        return None
    return data.mixed(span.start, span.end).mean(axis=0)


def _doc_vector(doc: Doc) -> Optional[Any]:
    data = doc._.elmo
    if data is None or len(doc) == 0:
        return None
    return data.mixed().mean(axis=0)


def set_vector_hooks(doc: Doc) -> None:
    """Make ``.vector``, ``.has_vector``, ``.vector_norm`` and ``.similarity()``
    of the doc, its spans and tokens use the ELMo vectors."""
    for hooks, getter in (
        (doc.user_hooks, _doc_vector),
        (doc.user_span_hooks, _span_vector),
        (doc.user_token_hooks, _token_vector),
    ):
        hooks["vector"] = _required(getter)
        hooks["has_vector"] = lambda obj, getter=getter: getter(obj) is not None
        hooks["vector_norm"] = lambda obj, getter=getter: _norm(getter(obj))
        hooks["similarity"] = lambda obj, other: _cosine(obj.vector, other.vector)


def _required(getter):
    # spaCy's `.vector` must be an array: zeros for an empty span, and an
    # error (never zeros) for a doc the component has not processed.
    def vector(obj):
        value = getter(obj)
        if value is not None:
            return value
        data = (obj if isinstance(obj, Doc) else obj.doc)._.elmo
        if data is None:
            raise ElmoError("E402", Errors.E402.format(text=obj.text[:40]))
        return get_array_module(data.layers).zeros((data.width,), dtype="float32")

    return vector


def _norm(vector: Optional[Any]) -> float:
    if vector is None:
        return 0.0
    xp = get_array_module(vector)
    return float(xp.sqrt((vector * vector).sum()))


def _cosine(a: Any, b: Any) -> float:
    norm = _norm(a) * _norm(b)
    return 0.0 if norm == 0.0 else float((a * b).sum()) / norm
