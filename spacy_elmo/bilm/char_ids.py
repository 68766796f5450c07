"""Tokens to ELMo character ids.

The scheme is the one every ELMo model was trained with: a token becomes
``[begin-word, utf-8 bytes..., end-word, padding...]`` over ``max_chars``
positions, with at most ``max_chars - 2`` bytes kept. The sentence boundaries
``<S>`` and ``</S>`` are single special characters between begin- and end-word.
Every id is shifted by +1 so that 0 means "no token here".

Text is encoded with ``errors="ignore"``, so characters that have no UTF-8 form
(lone surrogates) are dropped. An empty token (or one made only of dropped
characters) becomes ``[begin-word, end-word, padding...]``; whitespace tokens
keep their bytes like any other token.
"""
from itertools import chain
from operator import methodcaller
from typing import List, Sequence, Tuple

import numpy
import torch

from ..errors import InputError

MAX_CHARS_PER_TOKEN = 50
BOS_CHAR = 256  # begin of sentence
EOS_CHAR = 257  # end of sentence
BOW_CHAR = 258  # begin of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding after the end of word
BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _special_token_ids(char: int, max_chars: int) -> numpy.ndarray:
    ids = numpy.full((max_chars,), PAD_CHAR + 1, dtype=numpy.int64)
    ids[:3] = (BOW_CHAR + 1, char + 1, EOW_CHAR + 1)
    return ids


def words_to_ids(
    words: Sequence[str], max_chars: int = MAX_CHARS_PER_TOKEN
) -> numpy.ndarray:
    """Character ids of distinct words, shape ``(len(words), max_chars)``.

    The strings ``<S>`` and ``</S>`` map to the sentence boundary tokens, as in
    the original implementation.
    """
    joined = "".join(words)
    if joined.isascii():  # one byte a character: the whole batch encoded at once
        all_bytes = joined.encode("ascii")
        lengths = numpy.fromiter(map(len, words), dtype=numpy.int64, count=len(words))
    else:
        encoded = list(map(methodcaller("encode", "utf-8", "ignore"), words))
        all_bytes = b"".join(encoded)
        lengths = numpy.fromiter(map(len, encoded), dtype=numpy.int64, count=len(encoded))
    # Every byte's row and column (1.. its word's length); at most max_chars - 2 kept.
    starts = numpy.cumsum(lengths) - lengths
    rows = numpy.repeat(numpy.arange(len(words)), lengths)
    cols = numpy.arange(len(all_bytes)) - numpy.repeat(starts, lengths) + 1
    kept = cols <= max_chars - 2
    lengths = numpy.minimum(lengths, max_chars - 2)
    ids = numpy.full((len(words), max_chars), PAD_CHAR + 1, dtype=numpy.int64)
    ids[:, 0] = BOW_CHAR + 1
    ids[rows[kept], cols[kept]] = numpy.add(numpy.frombuffer(all_bytes, dtype=numpy.uint8)[kept], 1, dtype=numpy.int64)
    ids[numpy.arange(len(words)), lengths + 1] = EOW_CHAR + 1
    # The boundaries: 3 and 4 bytes long.
    for i in numpy.flatnonzero((lengths == len(BOS_TOKEN)) | (lengths == len(EOS_TOKEN))).tolist():
        if words[i] == BOS_TOKEN:
            ids[i] = _special_token_ids(BOS_CHAR, max_chars)
        elif words[i] == EOS_TOKEN:
            ids[i] = _special_token_ids(EOS_CHAR, max_chars)
    return ids


def distinct_words(sentences: Sequence[Sequence[str]]) -> Tuple[List[str], numpy.ndarray, numpy.ndarray]:
    """One pass over a batch of tokenised sentences: its distinct words, and
    every token as an index into them.

    RETURNS: (words, index, lengths): `words` starts with ``<S>`` and ``</S>``
        (indices 0 and 1) followed by the batch's other distinct words in order of
        first appearance; `index` (n_tokens,) int64, the tokens sentence after
        sentence; `lengths` (n_sentences,) int64, each sentence's number of tokens.
    """
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes)) or not hasattr(sentence, "__len__"):
            raise InputError("E103", found=type(sentence).__name__, index=i)
    lengths = numpy.fromiter(map(len, sentences), dtype=numpy.int64, count=len(sentences))
    tokens = list(chain.from_iterable(sentences))
    try:
        words = list(dict.fromkeys(chain((BOS_TOKEN, EOS_TOKEN), tokens)))
    except TypeError:  # an unhashable token, e.g. a list
        words = None
    if words is None or not all(type(word) is str for word in words):
        position = next(i for i, t in enumerate(tokens) if type(t) is not str)
        sentence = int(numpy.searchsorted(numpy.cumsum(lengths), position, side="right"))
        raise InputError("E103", found="a token of type " + type(tokens[position]).__name__, index=sentence)
    vocab = {word: i for i, word in enumerate(words)}
    index = numpy.fromiter(map(vocab.__getitem__, tokens), dtype=numpy.int64, count=len(tokens))
    return words, index, lengths


def words_with_boundaries(texts: Sequence[str]) -> Tuple[List[str], numpy.ndarray]:
    """Distinct token texts (e.g. a batch's, from its ORTH ids) as the words of
    `distinct_words`: ``<S>`` and ``</S>`` first, then the others; and where
    each text is among them, (len(texts),) int64. A text ``<S>`` or ``</S>``
    is that boundary word, as in `distinct_words`."""
    words = list(dict.fromkeys(chain((BOS_TOKEN, EOS_TOKEN), texts)))
    if len(words) == len(texts) + 2:  # neither boundary among the texts
        return words, numpy.arange(2, len(words), dtype=numpy.int64)
    vocab = {word: i for i, word in enumerate(words)}
    return words, numpy.fromiter(map(vocab.__getitem__, texts), dtype=numpy.int64, count=len(texts))


def batch_to_ids(
    sentences: List[List[str]], max_chars: int = MAX_CHARS_PER_TOKEN
) -> torch.Tensor:
    """Character ids for a batch of tokenised sentences.

    sentences: a list of sentences, each a list of token strings.
    RETURNS: a ``torch.LongTensor`` of shape ``(batch, max_tokens, max_chars)``,
        0 at the positions of absent tokens.
    """
    words, index, lengths = distinct_words(sentences)
    max_tokens = int(lengths.max(initial=0))
    # Row 0 of the table is the all-zero "no token"; word k is row k + 1.
    table = numpy.zeros((len(words) + 1, max_chars), dtype=numpy.int64)
    table[1:] = words_to_ids(words, max_chars)
    padded = numpy.zeros((len(sentences), max_tokens), dtype=numpy.int64)
    padded[numpy.arange(max_tokens) < lengths[:, None]] = index + 1
    return torch.from_numpy(table[padded])
