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

A biLM whose options hold a character table (ELMoForManyLangs') encodes tokens
with `CodePointIds` instead: characters by code point, and with a word table a
last column of word ids. `token_ids` gives a biLM's scheme, either way an
object with `words_to_ids`, `lengths`, `width`, `pad_id` and `max_id`.
"""

from itertools import chain
from operator import methodcaller
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

import numpy
import torch

from ..errors import InputError

if TYPE_CHECKING:
    from .options import BiLMOptions, CharTable, WordTable

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


def words_to_ids(words: Sequence[str], max_chars: int = MAX_CHARS_PER_TOKEN) -> numpy.ndarray:
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


class ByteIds:
    """bilm-tf's scheme (`words_to_ids`) as an object, beside `CodePointIds`."""

    pad_id = PAD_CHAR + 1
    max_id = PAD_CHAR + 1

    def __init__(self, max_chars: int = MAX_CHARS_PER_TOKEN):
        self.max_chars = self.width = max_chars

    def words_to_ids(self, words: Sequence[str]) -> numpy.ndarray:
        """(len(words), max_chars): as the module's `words_to_ids`."""
        return words_to_ids(words, self.max_chars)

    def lengths(self, ids: numpy.ndarray) -> numpy.ndarray:
        """Each row's number of character ids before the padding (marks included)."""
        return (ids != self.pad_id).sum(axis=1)


class CodePointIds:
    """ELMoForManyLangs' scheme: tokens to ids through a character table, and
    a word table when there is one.

    A token is cut to its first ``max_chars - 2`` code points, then becomes
    ``[begin_word, character ids..., end_word, padding...]`` (characters not
    in the table are its `unknown`), then, with a word table, by the cut
    token's word id (`unknown` where it is not in the table). The sentence
    boundaries (``<S>``/``</S>``, and the table's own marks as tokens) are
    ``[begin_word, begin_sentence or end_sentence, end_word, padding...]``
    and the word table's boundary words. Ids are the tables' positions + 1,
    so that 0 means "no token" as in the byte scheme.
    """

    def __init__(self, chars: "CharTable", max_chars: int, words: Optional["WordTable"] = None):
        self.max_chars = max_chars
        self.width = max_chars + (words is not None)
        char_id = {entry: k + 1 for k, entry in enumerate(chars.entries)}
        self.pad_id = char_id[chars.padding]
        self._begin, self._end, self._unknown = (char_id[m] for m in (chars.begin_word, chars.end_word, chars.unknown))
        singles = sorted((ord(entry), k) for entry, k in char_id.items() if len(entry) == 1)
        # The table's characters by code point, sorted, after a sentinel no character matches.
        self._code_points = numpy.array([-1] + [cp for cp, _ in singles], dtype=numpy.int64)
        self._char_ids = numpy.array([self._unknown] + [k for _, k in singles], dtype=numpy.int64)
        self._words = None if words is None else {entry: k + 1 for k, entry in enumerate(words.entries)}
        self.max_id = max(len(chars.entries), 0 if words is None else len(words.entries))
        # Each boundary, under our name and the table's: its character ids and its word.
        self._boundaries: Dict[str, Tuple[numpy.ndarray, str]] = {}
        boundary_words = (None, None) if words is None else (words.begin_sentence, words.end_sentence)
        for ours, mark, word in (
            (BOS_TOKEN, chars.begin_sentence, boundary_words[0]),
            (EOS_TOKEN, chars.end_sentence, boundary_words[1]),
        ):
            ids = numpy.full((max_chars,), self.pad_id, dtype=numpy.int64)
            ids[:3] = (self._begin, char_id[mark], self._end)
            self._boundaries[ours] = self._boundaries[mark] = (ids, word)
        self._word_unknown = None if words is None else self._words[words.unknown]

    def words_to_ids(self, words: Sequence[str]) -> numpy.ndarray:
        """The ids of `words`: (len(words), width) int64."""
        cut = [word[: self.max_chars - 2] for word in words]
        code_points = numpy.frombuffer("".join(cut).encode("utf-32-le", "surrogatepass"), dtype="<u4")
        lengths = numpy.fromiter(map(len, cut), dtype=numpy.int64, count=len(cut))
        found = numpy.minimum(numpy.searchsorted(self._code_points, code_points), len(self._code_points) - 1)
        chars = numpy.where(self._code_points[found] == code_points, self._char_ids[found], self._unknown)
        rows = numpy.repeat(numpy.arange(len(cut)), lengths)
        cols = numpy.arange(len(code_points)) - numpy.repeat(numpy.cumsum(lengths) - lengths, lengths) + 1
        ids = numpy.full((len(cut), self.width), self.pad_id, dtype=numpy.int64)
        ids[:, 0] = self._begin
        ids[rows, cols] = chars
        ids[numpy.arange(len(cut)), lengths + 1] = self._end
        if self._words is not None:
            ids[:, -1] = [self._words.get(word, self._word_unknown) for word in cut]
        for i, word in enumerate(cut):
            if word in self._boundaries:
                chars_of, boundary_word = self._boundaries[word]
                ids[i, : self.max_chars] = chars_of
                if self._words is not None:
                    ids[i, -1] = self._words.get(boundary_word, self._word_unknown)
        return ids

    def lengths(self, ids: numpy.ndarray) -> numpy.ndarray:
        """Each row's number of character ids before the padding (marks included)."""
        return (ids[:, : self.max_chars] != self.pad_id).sum(axis=1)


TokenIds = Union[ByteIds, CodePointIds]


def token_ids(options: "BiLMOptions") -> TokenIds:
    """The scheme that encodes tokens for a biLM of `options`."""
    if options.char_table is None:
        return ByteIds(options.max_characters_per_token)
    return CodePointIds(options.char_table, options.max_characters_per_token, options.word_table)


def batch_to_ids(
    sentences: List[List[str]], max_chars: int = MAX_CHARS_PER_TOKEN, scheme: Optional[TokenIds] = None
) -> torch.Tensor:
    """Character ids for a batch of tokenised sentences.

    sentences: a list of sentences, each a list of token strings.
    scheme: how tokens become ids (`token_ids`), in place of bilm-tf's bytes over `max_chars`.
    RETURNS: a ``torch.LongTensor`` of shape ``(batch, max_tokens, width)``
        (width: max_chars, or the scheme's), 0 at the positions of absent tokens.
    """
    scheme = scheme or ByteIds(max_chars)
    words, index, lengths = distinct_words(sentences)
    max_tokens = int(lengths.max(initial=0))
    # Row 0 of the table is the all-zero "no token"; word k is row k + 1.
    table = numpy.zeros((len(words) + 1, scheme.width), dtype=numpy.int64)
    table[1:] = scheme.words_to_ids(words)
    padded = numpy.zeros((len(sentences), max_tokens), dtype=numpy.int64)
    padded[numpy.arange(max_tokens) < lengths[:, None]] = index + 1
    return torch.from_numpy(table[padded])
