"""How `spacy-elmo.BiLM.v1` cuts a doc into the segments the biLM reads.

A segmenter is called as ``segmenter(doc, sentence_starts, window_size)``
(`sentence_starts`: where the doc's sentences start, as the biLM's
`sentences` setting reads them, [0] for a doc without boundaries;
`window_size`: the biLM's setting) and returns windows
``(start, end, keep_start, keep_end)``: the biLM reads tokens start..end as
one sentence, and tokens keep_start..keep_end take their vectors from that
reading. Every token of the doc is kept from exactly one window (checked by
`checked_windows` where the biLM reads them: E412 names the segmenter).
"""

import operator
from typing import Callable, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from spacy.util import registry

from ..errors import ConfigError
from .settings import WindowsSettings, check_settings

SENTENCES = "spacy-elmo.sentences.v1"
WINDOWS = "spacy-elmo.windows.v1"
Window = Tuple[int, int, int, int]  # (start, end, keep_start, keep_end), in tokens of the doc
Segmenter = Callable[[Doc, Sequence[int], int], List[Window]]


@registry.misc(SENTENCES)
def sentence_segmenter() -> Segmenter:
    """Sentences, as the biLM was trained on them (the default): each sentence
    read on its own, and one longer than `window_size` cut into windows of
    that many tokens. A doc without sentence boundaries is one sentence."""
    return read_sentences


def read_sentences(doc: Doc, sentence_starts: Sequence[int], window_size: int) -> List[Window]:
    windows = []
    starts = list(sentence_starts)
    for start, end in zip(starts, starts[1:] + [len(doc)]):
        for window_start in range(start, end, window_size):
            window_end = min(end, window_start + window_size)
            windows.append((window_start, window_end, window_start, window_end))
    return windows


@registry.misc(WINDOWS)
def window_segmenter(size: Optional[int] = None, stride: Optional[int] = None) -> Segmenter:
    """Windows of `size` tokens across the whole doc, whatever its sentences,
    one every `stride` tokens. Where windows overlap (stride < size), a token
    takes its vectors from the window where it is most central (the most
    context on its less-read side), so every token has context on both sides
    except at the doc's ends.

    size: the window's length; unset, the biLM's `window_size`.
    stride: from one window's start to the next, 1 <= stride <= size; unset,
        the size (windows that touch, as `sentences.v1` cuts a doc without
        boundaries).
    """
    check_settings(WindowsSettings, {"size": size, "stride": stride}, WINDOWS, "[components.elmo.model.segmenter]")

    def read_windows(doc: Doc, sentence_starts: Sequence[int], window_size: int) -> List[Window]:
        length = size or window_size
        step = stride or length
        if step > length:  # only with size unset: the biLM's window_size is known now
            check_settings(
                WindowsSettings,
                {"size": length, "stride": step},
                WINDOWS,
                "[components.elmo.model.segmenter] (size unset: the biLM's window_size)",
            )
        return overlapping_windows(len(doc), length, step)

    return read_windows


def overlapping_windows(n_tokens: int, size: int, stride: int) -> List[Window]:
    """Windows of `size` every `stride` tokens until one reaches the end, each
    token kept from the window where it is furthest from an edge (the first
    such window on a tie)."""
    if n_tokens == 0:
        return []
    spans = [(0, min(n_tokens, size))]
    while spans[-1][1] < n_tokens:
        start = spans[-1][0] + stride
        spans.append((start, min(n_tokens, start + size)))
    windows: List[Window] = []
    first = 0  # the first window that may hold the current token
    for token in range(n_tokens):
        while spans[first][1] <= token:
            first += 1
        best, best_margin = first, -1
        for k in range(first, len(spans)):
            start, end = spans[k]
            if start > token:
                break
            margin = min(token - start, end - 1 - token)
            if margin > best_margin:
                best, best_margin = k, margin
        start, end = spans[best]
        if windows and windows[-1][:2] == (start, end) and windows[-1][3] == token:
            windows[-1] = (start, end, windows[-1][2], token + 1)
        else:
            windows.append((start, end, token, token + 1))
    return windows


def checked_windows(segmenter: Segmenter, doc: Doc, sentence_starts: Sequence[int], window_size: int) -> List[Window]:
    """`segmenter`'s windows of `doc`, checked: each a range of the doc, and
    their kept ranges covering every token exactly once (E412, naming the
    segmenter). One pass over the windows, none over the tokens."""
    windows = segmenter(doc, sentence_starts, window_size)
    n_tokens = len(doc)

    def refuse(problem: str) -> ConfigError:
        name = getattr(segmenter, "__qualname__", None) or repr(segmenter)
        module = getattr(segmenter, "__module__", None)
        return ConfigError(
            "E412",
            segmenter=f"'{module}.{name}'" if module else f"'{name}'",
            text=doc.text[:40],
            n_tokens=n_tokens,
            problem=problem,
        )

    if not isinstance(windows, (list, tuple)):
        raise refuse(f"are not a list but {type(windows).__name__}")
    checked: List[Window] = []
    for window in windows:
        try:
            start, end, keep_start, keep_end = (operator.index(i) for i in window)
        except (TypeError, ValueError):
            raise refuse(f"include {window!r}, not 4 whole numbers") from None
        if not 0 <= start <= keep_start <= keep_end <= end <= n_tokens:
            raise refuse(f"include {window!r}, which is not a range inside the doc with its kept range inside it")
        checked.append((start, end, keep_start, keep_end))
    kept = sorted((keep_start, keep_end) for _, _, keep_start, keep_end in checked if keep_start < keep_end)
    covered = 0  # tokens 0..covered are kept from exactly one window so far
    for keep_start, keep_end in kept:
        if keep_start > covered:
            raise refuse(f"keep no vectors for tokens {covered}..{keep_start}")
        if keep_start < covered:
            raise refuse(f"keep tokens {keep_start}..{min(covered, keep_end)} from more than one window")
        covered = keep_end
    if covered < n_tokens:
        raise refuse(f"keep no vectors for tokens {covered}..{n_tokens}")
    return checked
