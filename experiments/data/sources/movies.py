"""Rotten Tomatoes plot synopses and critics' one-sentence review snippets, one document
per movie: its plot's paragraphs, then its snippets one a line.

The CSV (``category,text,movie_name,has_plot_and_reviews``; category ``plot``,
``fresh`` or ``rotten``) is the source of the sentence-polarity snippets, so the
leakage filter removes many of its snippets from the corpus.
"""

import csv
import io

from experiments.data.archive import decode_text
from experiments.data.text import Document, normalize_space


def read_movies(files: list[bytes]) -> list[Document]:
    """Plot paragraphs first, then snippets, per movie (movies in order of first appearance)."""
    plots: dict[str, list[str]] = {}
    snippets: dict[str, list[str]] = {}
    for data in files:
        for row in csv.DictReader(io.StringIO(decode_text(data), newline="")):
            movie = row.get("movie_name") or ""
            plots.setdefault(movie, [])
            snippets.setdefault(movie, [])
            lines = [normalize_space(p) for p in (row.get("text") or "").splitlines()]
            target = plots if row.get("category") == "plot" else snippets
            target[movie].extend(line for line in lines if line)
    docs = [plots[movie] + snippets[movie] for movie in plots]
    return [doc for doc in docs if doc]
