"""The output vocabulary of the language models (`LMVocab`).

Not spaCy's `Vocab` (the strings and lexemes of a pipeline): this is the list
of words the pretraining softmax predicts, one id each.

Counted from the training data, its entries are ``<S>``, ``</S>``, ``<UNK>``,
then the most frequent words, most frequent first (ties in order of first
appearance), so that an adaptive softmax's frequency clusters are ranges of
ids. Any word can be *input* (the input side reads characters); a word
outside the vocabulary is *predicted* as ``<UNK>``. Saved as ``vocab.txt``,
one entry a line, the format of bilm-tf and AllenNLP; a file from elsewhere
needs the three special entries somewhere in it.
"""
import hashlib
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Union

import numpy

from ...bilm.char_ids import BOS_TOKEN, EOS_TOKEN
from ...errors import DamagedFileError

UNK_TOKEN = "<UNK>"
SPECIALS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


class LMVocab:
    def __init__(self, words: Iterable[str]):
        self.words: List[str] = list(words)
        self.index: Dict[str, int] = {}
        for i, word in enumerate(self.words):
            self.index.setdefault(word, i)
        missing = [s for s in SPECIALS if s not in self.index]
        if missing:
            raise DamagedFileError("E303", missing=missing)
        self.bos_id = self.index[BOS_TOKEN]
        self.eos_id = self.index[EOS_TOKEN]
        self.unk_id = self.index[UNK_TOKEN]

    def __len__(self) -> int:
        return len(self.words)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LMVocab) and self.words == other.words

    @property
    def sha256(self) -> str:
        """A digest of the entries in order (checkpoints keep it, to check the vocab.txt they resume with)."""
        return hashlib.sha256("\n".join(self.words).encode("utf8", "surrogatepass")).hexdigest()

    @classmethod
    def from_counts(cls, words: Sequence[str], counts: numpy.ndarray, size: int, min_count: int = 1) -> "LMVocab":
        """The specials and the `size` - 3 most frequent `words` (size 0: all)
        that occur at least `min_count` times."""
        order = numpy.argsort(-counts, kind="stable")
        keep = order[counts[order] >= min_count]
        chosen = [words[i] for i in keep if words[i] not in SPECIALS]
        if size:
            chosen = chosen[: size - len(SPECIALS)]
        return cls([*SPECIALS, *chosen])

    def ids(self, words: Sequence[str]) -> numpy.ndarray:
        """The id of each word, ``<UNK>``'s for those outside the vocabulary."""
        get, unk = self.index.get, self.unk_id
        return numpy.fromiter((get(w, unk) for w in words), dtype=numpy.int64, count=len(words))

    def to_file(self, path: Union[str, Path]) -> None:
        Path(path).write_text("".join(w + "\n" for w in self.words), encoding="utf8", newline="")

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "LMVocab":
        try:
            with open(path, encoding="utf8", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as err:
            raise DamagedFileError("E304", path=path, reason=err) from err
        words = text.split("\n")
        if words and words[-1] == "":
            words.pop()
        return cls(words)

