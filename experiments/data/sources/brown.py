"""The Brown corpus (1961 American English, 15 genres) in its tagged NLTK layout:
one file per text sample, one ``word/tag`` sentence a line (tab-indented).

Tags go (``strip_tagged_line``: ``Atlanta's/np$`` -> ``Atlanta's``), the ASCII
quotes `````` and ``''`` become ``"``, and each sample is one document in lines of
five sentences.
"""

from experiments.data.archive import decode_text
from experiments.data.text import Document, group_lines, strip_tagged_line

SENTENCES_PER_LINE = 5
QUOTES = {"``": '"', "''": '"'}


def untag_brown_line(line: str) -> str:
    """A tagged sentence as plain, space-separated tokens."""
    return " ".join(QUOTES.get(token, token) for token in strip_tagged_line(line).split())


def read_brown(files: list[bytes]) -> list[Document]:
    """One document per sample file."""
    docs = []
    for data in files:
        sentences = [untag_brown_line(line) for line in decode_text(data).splitlines() if line.strip()]
        doc = group_lines(sentences, SENTENCES_PER_LINE)
        if doc:
            docs.append(doc)
    return docs
