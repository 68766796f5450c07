"""Speeches: House of Commons speeches (a ParlSpeech V2 sample) and the 2012 and 2016
US party convention speeches. One document per speech, one paragraph a line.

Both are CSV files with a ``text`` column; paragraphs are separated by newlines.
"""

import csv
import io

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space


def read_speeches(files: list[bytes]) -> list[Document]:
    """One document per CSV row: the paragraphs of its ``text``."""
    docs = []
    for data in files:
        for row in csv.DictReader(io.StringIO(decode_text(data), newline="")):
            paragraphs = [normalize_space(p) for p in (row.get("text") or "").splitlines()]
            paragraphs = [p for p in paragraphs if p]
            if paragraphs:
                docs.append(paragraphs)
    return docs
