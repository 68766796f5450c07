"""Tatoeba's English sentences, out of two tab-separated English-to-X translation lists.

Each row is ``English<TAB>translation<TAB>attribution``; only the English column
is read, each distinct sentence once (in order of first appearance across the
files), one sentence a line. The sentences are unrelated, so they are cut into
pseudo-documents of ``SENTENCES_PER_DOC`` for the shuffle and the dev hold-out.
"""

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space

SENTENCES_PER_DOC = 50


def read_tatoeba(files: list[bytes]) -> list[Document]:
    """The distinct English sentences of the ``.tsv`` files, in documents of 50."""
    seen: dict[str, None] = {}
    for data in files:
        for row in decode_text(data).splitlines():
            sentence = normalize_space(row.split("\t", 1)[0])
            if sentence:
                seen.setdefault(sentence)
    sentences = list(seen)
    return [sentences[start : start + SENTENCES_PER_DOC] for start in range(0, len(sentences), SENTENCES_PER_DOC)]
