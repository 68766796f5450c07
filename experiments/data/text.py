"""Plain-text helpers every corpus source and the leakage filter share.

A ``Document`` is a list of paragraphs, each one output line of the pretraining text. The
helpers normalise whitespace, group sentences into lines, split lines into sentences, strip
``word/TAG`` part-of-speech tags, and give the normalised form texts are matched in.
"""

import re

# A document is a list of paragraphs; each paragraph becomes one output line.
Document = list[str]

# Sentence boundary: whitespace after ., ! or ?, or after one of them followed
# by a closing quote or bracket.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'\u201d\u2019)\]])\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")
_HAS_ALNUM = re.compile(r"[^\W_]")


def normalize_space(text: str) -> str:
    """Collapse every run of whitespace to one space and trim the ends."""
    return " ".join(text.split())


def group_lines(sentences: list[str], size: int) -> list[str]:
    """Join consecutive non-empty sentences into lines of ``size`` sentences."""
    sentences = [s for s in (normalize_space(s) for s in sentences) if s]
    return [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def split_sentences(text: str) -> list[str]:
    """Sentences of a line by ``SENTENCE_BREAK``; empty pieces dropped."""
    return [s for s in SENTENCE_BREAK.split(text.strip()) if s]


def normalize_for_match(text: str) -> str:
    """Lower-cased, with punctuation and all whitespace removed.

    Removing the whitespace too (rather than collapsing it to one space) makes
    tokenised and untokenised copies agree: ``it 's`` / ``it's`` -> ``its``.
    """
    return _NOT_ALNUM.sub("", text.lower())


def count_words(text: str) -> int:
    """Whitespace tokens holding at least one letter or digit."""
    return sum(1 for token in text.split() if _HAS_ALNUM.search(token))


def strip_pos_tag(token: str) -> str:
    """``word/TAG`` -> ``word``. Only the last ``/TAG`` goes (``and/or/CC`` -> ``and/or``).

    A token without a slash, or whose word part would be empty, is kept as is.
    OANC writes a literal slash inside a word as ``&slash;``; it is restored.
    """
    word, slash, _tag = token.rpartition("/")
    if not slash or not word:
        word = token
    return word.replace("&slash;", "/")


def strip_tagged_line(line: str) -> str:
    """A line of ``word/TAG`` tokens as plain text, tokens joined by spaces."""
    return " ".join(strip_pos_tag(token) for token in line.split())
