"""Keeping the downstream task sets out of the pretraining corpus.

Leaving the sets' files out is not enough: the same sentences can occur inside the corpus
sources (a review quoted on Wikipedia, a snippet taken from one of the full reviews). So every
sentence of every downstream set (``experiments.data.tasks.DOWNSTREAM``), train, dev and test
alike (stricter than needed: only dev and test matter for a fair evaluation), is removed:

* a corpus line is split into sentences by ``SENTENCE_BREAK`` (after ``.``, ``!`` or ``?``,
  possibly followed by a closing quote or bracket);
* a sentence is dropped when it equals a downstream text, or a sentence of one, either exactly
  (after whitespace collapsing: counted as ``exact``) or in normalised form
  (``normalize_for_match``: lower-cased, punctuation removed and whitespace removed entirely, so
  that the tokenised ``does n't`` and ``doesn't`` agree: counted as ``normalised``). Only
  downstream texts and sentences of at least ``MIN_SENTENCE_WORDS`` = 4 words take part, so a
  snippet such as "Great ." does not remove every "Great ." in the corpus;
* a whole line is dropped when its normalised form contains the normalised form of a downstream
  text of at least ``MIN_SUBSTRING_WORDS`` = 8 words (counted as ``substring``): this catches a
  snippet quoted inside a longer sentence.

A word, for these thresholds, is a whitespace token with a letter or digit.
"""

from collections import Counter
from pathlib import Path
from typing import Iterable

from experiments.data.tasks import DOWNSTREAM
from experiments.data.text import Document, count_words, normalize_for_match, normalize_space, split_sentences
from experiments.errors import ExperimentError

# Downstream texts (and their sentences) shorter than this many words do not
# take part in the sentence match: "Great ." must not remove every "Great .".
MIN_SENTENCE_WORDS = 4
# Downstream texts of at least this many words also remove every corpus line
# that contains them (normalised) as a substring.
MIN_SUBSTRING_WORDS = 8
# What leakage.json counts per source.
COUNT_KEYS = ("exact_sentences", "normalised_sentences", "substring_lines", "removed_tokens", "emptied_docs")


class LeakageFilter:
    """Removes the sentences of the downstream texts from corpus lines.

    See the module docstring for the rules. ``clean_line`` returns the line
    without its leaked sentences (``""`` when nothing is left or the line
    contains a long downstream text) and adds what it removed to ``counts``.
    """

    def __init__(self, texts: Iterable[str]):
        self.exact: set[str] = set()
        self.normalised: set[str] = set()
        long_keys: set[str] = set()
        for text in texts:
            text = normalize_space(text)
            for piece in {text, *split_sentences(text)}:
                if count_words(piece) >= MIN_SENTENCE_WORDS:
                    self.exact.add(piece)
                    self.normalised.add(normalize_for_match(piece))
            if count_words(text) >= MIN_SUBSTRING_WORDS:
                long_keys.add(normalize_for_match(text))
        self.normalised.discard("")
        long_keys.discard("")
        # Substring search: every long key is indexed by its first
        # ``window`` characters; a line is scanned window by window.
        self.window = min((len(key) for key in long_keys), default=0)
        self.by_prefix: dict[str, list[str]] = {}
        for key in sorted(long_keys):
            self.by_prefix.setdefault(key[: self.window], []).append(key)

    def contains_long_text(self, line: str) -> bool:
        """Whether the normalised line contains a normalised long downstream text."""
        if not self.window:
            return False
        norm = normalize_for_match(line)
        get, window = self.by_prefix.get, self.window
        for start in range(len(norm) - window + 1):
            keys = get(norm[start : start + window])
            if keys and any(norm.startswith(key, start) for key in keys):
                return True
        return False

    def clean_line(self, line: str, counts: Counter) -> str:
        kept = []
        for sentence in split_sentences(line):
            if sentence in self.exact:
                counts["exact_sentences"] += 1
                counts["removed_tokens"] += len(sentence.split())
            elif normalize_for_match(sentence) in self.normalised:
                counts["normalised_sentences"] += 1
                counts["removed_tokens"] += len(sentence.split())
            else:
                kept.append(sentence)
        cleaned = " ".join(kept)
        if cleaned and self.contains_long_text(cleaned):
            counts["substring_lines"] += 1
            counts["removed_tokens"] += len(cleaned.split())
            return ""
        return cleaned


def load_downstream_texts(assets_dir: Path) -> dict[str, list[str]]:
    """Every text of every downstream set, all splits, by set name."""
    texts = {}
    for name, (rel_path, read_texts) in DOWNSTREAM.items():
        path = assets_dir / rel_path
        if not path.exists():
            raise ExperimentError(
                path,
                expected=f"the downstream set {name} (kept out of the corpus)",
                found="nothing (it is missing)",
                fix=f"run `python -m experiments.data.fetch {assets_dir}` first",
            )
        texts[name] = read_texts(path)
    return texts


def downstream_filter(assets_dir: Path) -> LeakageFilter:
    """The filter of every text of every downstream set under ``assets_dir``."""
    downstream = load_downstream_texts(assets_dir)
    return LeakageFilter(text for texts in downstream.values() for text in texts)


def remove_leakage(
    docs: list[tuple[str, Document]], leakage_filter: LeakageFilter
) -> tuple[list[tuple[str, Document]], dict[str, Counter]]:
    """Docs with downstream sentences removed (empty lines and docs dropped).

    Returns the cleaned docs and, per source, the counts of removed exact and
    normalised sentence matches, substring lines, tokens and emptied docs.
    """
    counts: dict[str, Counter] = {}
    cleaned_docs = []
    for source, doc in docs:
        counter = counts.setdefault(source, Counter())
        lines = [leakage_filter.clean_line(line, counter) for line in doc]
        lines = [line for line in lines if line]
        if lines:
            cleaned_docs.append((source, lines))
        else:
            counter["emptied_docs"] += 1
    return cleaned_docs, counts


def leakage_json(leakage: dict[str, Counter], sources: Iterable[str]) -> dict:
    """leakage.json: the rules, and what was removed per source and in total."""
    per_source = {source: {k: leakage.get(source, Counter())[k] for k in COUNT_KEYS} for source in sources}
    total = {k: sum(c[k] for c in per_source.values()) for k in COUNT_KEYS}
    return {
        "rules": {
            "downstream_sets": list(DOWNSTREAM),
            "splits_checked": "all (train, dev and test)",
            "min_sentence_words": MIN_SENTENCE_WORDS,
            "min_substring_words": MIN_SUBSTRING_WORDS,
            "normalisation": "lower-case, punctuation and whitespace removed",
        },
        "per_source": per_source,
        "total": total,
    }
