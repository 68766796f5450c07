"""WikiText-2 (raw): Wikipedia Good and Featured articles, one document per article.

The raw files keep every word (no ``<unk>``) but come tokenised, with headings as
`` = Title = `` / `` = = Section = = `` lines and the markers `` @-@ ``, `` @,@ ``
and `` @.@ `` inside hyphenated words and numbers. A top-level title starts a new
document; headings are dropped; the markers are joined back (``well @-@ known`` ->
``well-known``, ``1 @,@ 000`` -> ``1,000``). The tokenisation is otherwise kept, as
for the Pang & Lee reviews and the OANC sample of corpus v1.
"""

import re

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space

TITLE = re.compile(r"^= [^=].* =$")
HEADING = re.compile(r"^(= )+.*( =)+$")
JOINED_MARKER = re.compile(r" @([-,.])@ ")


def read_wikitext(files: list[bytes]) -> list[Document]:
    """One document per article (its paragraphs) from the raw WikiText files."""
    docs: list[Document] = []
    for data in files:
        doc: Document = []
        for line in decode_text(data).splitlines():
            line = normalize_space(line)
            if not line:
                continue
            if TITLE.match(line):
                if doc:
                    docs.append(doc)
                doc = []
            elif not HEADING.match(line):
                doc.append(JOINED_MARKER.sub(r"\1", line))
        if doc:
            docs.append(doc)
    return docs
