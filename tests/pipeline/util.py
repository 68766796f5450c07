"""Tiny labelled data for the pipeline tests."""

import random

from spacy.tokens import Span
from spacy.training import Example

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank"]
PLACES = ["Paris", "London", "Berlin", "Tokyo", "Lima"]
GOOD = ["great", "lovely", "wonderful", "fine"]
BAD = ["awful", "boring", "terrible", "dull"]


def make_docs(nlp, n: int, seed: int = 0):
    """Tiny labelled docs with both entities and a sentiment class."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        name, place = rng.choice(NAMES), rng.choice(PLACES)
        positive = rng.random() < 0.5
        word = rng.choice(GOOD if positive else BAD)
        doc = nlp.make_doc(f"{name} went to {place} and it was {word} .")
        doc.ents = [Span(doc, 0, 1, label="PERSON"), Span(doc, 3, 4, label="LOC")]
        doc.cats = {"POSITIVE": float(positive), "NEGATIVE": float(not positive)}
        docs.append(doc)
    return docs


def examples_of(nlp, docs):
    return [Example(nlp.make_doc(doc.text), doc) for doc in docs]
