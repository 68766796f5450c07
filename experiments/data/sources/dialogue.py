"""Cornell movie dialogue as ``prompt<TAB>reply`` pairs, one exchange a line.

The text is lower-cased at the source and kept so (the biLM sees it as informal,
uncased speech). Exchanges are cut into pseudo-documents of
``EXCHANGES_PER_DOC`` lines in file order.
"""

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space

EXCHANGES_PER_DOC = 50


def read_dialogue(files: list[bytes]) -> list[Document]:
    """Each ``prompt<TAB>reply`` row as one line (the two turns joined by a space)."""
    lines = [
        line
        for data in files
        for line in (normalize_space(row.replace("\t", " ")) for row in decode_text(data).splitlines())
        if line
    ]
    return [lines[start : start + EXCHANGES_PER_DOC] for start in range(0, len(lines), EXCHANGES_PER_DOC)]
