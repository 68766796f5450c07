"""Health-news tweets of 16 news outlets (2014-2015): one tweet a line.

The CSV (``source_id,text``; ``source_id`` is ``<account>-<tweet id>``) lists each
account's tweets together; runs of up to ``TWEETS_PER_DOC`` consecutive tweets of
one account make a document. Links and @-mentions are kept, as in WNUT's tweets.
"""

import csv
import io

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space

TWEETS_PER_DOC = 25


def read_tweets(files: list[bytes]) -> list[Document]:
    """Documents of up to 25 consecutive tweets of one account."""
    docs: list[Document] = []
    doc: Document = []
    account = None
    for data in files:
        for row in csv.DictReader(io.StringIO(decode_text(data), newline="")):
            text = normalize_space(row.get("text") or "")
            if not text:
                continue
            row_account = (row.get("source_id") or "").rsplit("-", 1)[0]
            if doc and (row_account != account or len(doc) == TWEETS_PER_DOC):
                docs.append(doc)
                doc = []
            account = row_account
            doc.append(text)
    if doc:
        docs.append(doc)
    return docs
