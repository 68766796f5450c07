"""The ``._.elmo`` extensions and, optionally, ELMo-backed ``.vector``/``.similarity()``.

``doc._.elmo`` is an `ElmoDocData` once the `elmo` component has run, and
``None`` before. The ``elmo_vector`` getters apply the component's fixed mix
(``vector_mix``): a token's vector, and the mean over a span's or doc's tokens.
They return ``None`` for a doc the component has not processed (never zeros
that look like real vectors), and an empty span or doc gives ``None`` too.

The layers belong to the tokens the doc had when the component ran. A doc
retokenized since (tokens merged or split) no longer matches them, and every
read of them is an error (E410), never another token's row: ``doc._.elmo``
and a doc's vector compare the number of tokens and every token's offset and
length with those recorded (`ElmoDocData.token_offsets`); a token's or a
span's vector compares the number of tokens and the offsets of the tokens it
reads, so reading one token costs the same in a long doc as in a short one.

The ``.vector`` hooks (``set_vector_hooks``) are module-level functions that
read ``doc._.elmo`` when called, so they pickle with the doc. spaCy drops a
doc's user hooks when it serialises it (``DocBin``, ``nlp.pipe(n_process=N)``,
warning W109), but the wish for them travels in ``doc._.elmo``
(``ElmoDocData.vector_hooks``): reading ``doc._.elmo`` (or an ``elmo_vector``)
puts them back on such a doc.
"""

from typing import Any, List, Optional, Union

import numpy
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc, Span, Token
from thinc.api import get_array_module

from . import data_classes  # noqa: F401  (the msgpack encoders of doc._.elmo, for DocBin)
from .errors import ConfigError, InputError

MixSpec = Union[str, int, List[float]]


# Where spaCy keeps ``doc._.elmo`` in ``doc.user_data`` (and so in DocBin files).
ELMO_KEY = ("._.", "elmo", None, None)


def install_extensions() -> None:
    """Register the extensions (safe to call more than once)."""
    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", getter=_get_elmo, setter=_set_elmo)
    for cls, getter in ((Doc, _doc_vector), (Span, _span_vector), (Token, _token_vector)):
        if not cls.has_extension("elmo_vector"):
            cls.set_extension("elmo_vector", getter=getter)


def fixed_mix_weights(spec: MixSpec, n_layers: int) -> numpy.ndarray:
    """Layer weights for a fixed mix, (n_layers,) float32: "average", "top", a
    layer index, or explicit weights, each finite in float32. Anything else
    is E401, a weight such as 1e39 too: finite in Python, it is inf in
    float32 and would make every vector inf or NaN."""
    weights = _fixed_mix(spec, n_layers)
    if weights is None:
        raise ConfigError("E401", found=spec, n_layers=n_layers)
    return weights


def _fixed_mix(spec: MixSpec, n_layers: int) -> Optional[numpy.ndarray]:
    """`fixed_mix_weights`, or None for a spec that is none of those."""
    if spec == "average":
        return numpy.full((n_layers,), 1.0 / n_layers, dtype="float32")
    if _are_weights(spec, n_layers):
        return _in_float32(spec)
    weights = numpy.zeros((n_layers,), dtype="float32")
    if spec == "top":
        weights[-1] = 1.0
    elif isinstance(spec, int) and not isinstance(spec, bool) and -n_layers <= spec < n_layers:
        weights[spec] = 1.0
    else:
        return None
    return weights


def _are_weights(spec: MixSpec, n_layers: int) -> bool:
    """Whether `spec` is a list of `n_layers` numbers (not bools)."""
    return (
        isinstance(spec, (list, tuple))
        and len(spec) == n_layers
        and all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in spec)
    )


def _in_float32(weights: List[float]) -> Optional[numpy.ndarray]:
    """The weights as float32, or None where one of them is not finite there."""
    try:
        with numpy.errstate(over="ignore"):  # a weight beyond float32 becomes inf
            converted = numpy.asarray(weights, dtype="float64").astype("float32")
    except OverflowError:  # an int beyond even float64
        return None
    return converted if numpy.isfinite(converted).all() else None


def token_offsets(doc: Doc) -> numpy.ndarray:
    """(n_tokens, 2) int32: every token's character offset and length, what
    the layers of ``doc._.elmo`` record to notice a retokenized doc."""
    return numpy.asarray(doc.to_array([IDX, LENGTH]), dtype="int32").reshape(len(doc), 2)


def check_tokens(doc: Doc, data: Any, start: int = 0, end: Optional[int] = None) -> None:
    """Raise E410 unless `data` was computed for the doc's tokens as they are
    now: the same number of tokens, and tokens start..end (all by default) at
    the offsets and of the lengths recorded."""
    if len(doc) != data.n_tokens:
        raise InputError(
            "E410",
            text=doc.text[:40],
            difference=f"they are {data.n_tokens} rows, the doc has {len(doc)} tokens",
        )
    recorded = getattr(data, "token_offsets", None)
    if recorded is None:  # data without offsets: the count is all there is
        return
    end = len(doc) if end is None else end
    if start == 0 and end == len(doc):
        found = token_offsets(doc)
    else:
        found = numpy.asarray([(t.idx, len(t)) for t in doc[start:end]], dtype="int32").reshape(-1, 2)
    expected = numpy.asarray(recorded[start:end])
    if numpy.array_equal(found, expected):
        return
    i = start + int(numpy.flatnonzero((found != expected).any(axis=1))[0])
    (was_at, was_len), (now_at, now_len) = expected[i - start], found[i - start]
    raise InputError(
        "E410",
        text=doc.text[:40],
        difference=(
            f"row {i} belongs to '{doc.text[was_at : was_at + was_len]}' (character {was_at}), but token {i} is "
            f"now '{doc.text[now_at : now_at + now_len]}' (character {now_at})"
        ),
    )


def _stored(doc: Doc) -> Optional[Any]:
    """``doc._.elmo`` as stored, unchecked (the vector hooks put back if wanted)."""
    data = doc.user_data.get(ELMO_KEY)
    wants_hooks = data is not None and getattr(data, "vector_hooks", False)
    if wants_hooks and "vector" not in doc.user_hooks:
        set_vector_hooks(doc)  # a doc that came back from a DocBin or another process
    return data


def _get_elmo(doc: Doc) -> Optional[Any]:
    data = _stored(doc)
    if data is not None:
        check_tokens(doc, data)
    return data


def _set_elmo(doc: Doc, value: Optional[Any]) -> None:
    doc.user_data[ELMO_KEY] = value


def _token_vector(token: Token) -> Optional[Any]:
    data = _stored(token.doc)
    if data is None:
        return None
    check_tokens(token.doc, data, token.i, token.i + 1)
    return data.mixed(token.i, token.i + 1)[0]


def _span_vector(span: Span) -> Optional[Any]:
    data = _stored(span.doc)
    if data is None:
        return None
    check_tokens(span.doc, data, span.start, span.end)
    if len(span) == 0:
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
    for hooks, vector in (
        (doc.user_hooks, _doc_vector_hook),
        (doc.user_span_hooks, _span_vector_hook),
        (doc.user_token_hooks, _token_vector_hook),
    ):
        hooks["vector"] = vector
        hooks["has_vector"] = _has_vector_hook
        hooks["vector_norm"] = _vector_norm_hook
        hooks["similarity"] = _similarity_hook


def _doc_vector_hook(doc: Doc) -> Any:
    return _required(doc, _doc_vector(doc))


def _span_vector_hook(span: Span) -> Any:
    return _required(span, _span_vector(span))


def _token_vector_hook(token: Token) -> Any:
    return _required(token, _token_vector(token))


def _getter_of(obj: Union[Doc, Span, Token]):
    return _doc_vector if isinstance(obj, Doc) else _span_vector if isinstance(obj, Span) else _token_vector


def _has_vector_hook(obj: Union[Doc, Span, Token]) -> bool:
    return _getter_of(obj)(obj) is not None


def _vector_norm_hook(obj: Union[Doc, Span, Token]) -> float:
    return _norm(_getter_of(obj)(obj))


def _similarity_hook(obj: Union[Doc, Span, Token], other: Union[Doc, Span, Token]) -> float:
    return _cosine(obj.vector, other.vector)


def _required(obj: Union[Doc, Span, Token], value: Optional[Any]) -> Any:
    # spaCy's `.vector` must be an array: zeros for an empty span, and an
    # error (never zeros) for a doc the component has not processed.
    if value is not None:
        return value
    data = (obj if isinstance(obj, Doc) else obj.doc)._.elmo
    if data is None:
        raise InputError("E402", text=obj.text[:40])
    return get_array_module(data.layers).zeros((data.width,), dtype="float32")


def _norm(vector: Optional[Any]) -> float:
    if vector is None:
        return 0.0
    xp = get_array_module(vector)
    return float(xp.sqrt((vector * vector).sum()))


def _cosine(a: Any, b: Any) -> float:
    norm = _norm(a) * _norm(b)
    return 0.0 if norm == 0.0 else float((a * b).sum()) / norm
