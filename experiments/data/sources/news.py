"""News articles of 2017 (ABC, CNN, BBC, Al Jazeera, DW, RTE, TASS, ...): one document
per article, its title, its subtitle, then its text in lines of five sentences.

The CSV (``article_id,publish_date,article_source_link,title,subtitle,text``) has
no paragraph marks, and its curly quotes and dashes were lost in an encoding
round trip: ``"?`` stands where a closing quote and a space were (``said,"?he``)
and, after a space, where a dash was (``WASHINGTON "?The``). Both are repaired;
the few U+FFFD replacement characters (in Irish and German names) are removed.
"""

import csv
import io
import re

from experiments.data.archive import decode_text
from experiments.data.text import Document, group_lines, normalize_space, split_sentences

SENTENCES_PER_LINE = 5
LOST_DASH = re.compile(r'(?<=\s)"\?')
LOST_QUOTE_SPACE = re.compile(r'"\?(?=\S)')


def repair_news_text(text: str) -> str:
    """Undo the encoding damage described in the module docstring."""
    text = LOST_DASH.sub("\u2014", text)
    text = LOST_QUOTE_SPACE.sub('" ', text).replace('"?', '"')
    return normalize_space(text.replace("\ufffd", ""))


def read_news_articles(files: list[bytes]) -> list[Document]:
    """One document per article: title, subtitle (when there is one), the text."""
    docs = []
    for data in files:
        for row in csv.DictReader(io.StringIO(decode_text(data), newline="")):
            head = [repair_news_text(row.get(key) or "") for key in ("title", "subtitle")]
            body = group_lines(split_sentences(repair_news_text(row.get("text") or "")), SENTENCES_PER_LINE)
            doc = [line for line in head if line] + body
            if body:
                docs.append(doc)
    return docs
