"""The downstream task sets, each read in one place: by its converter (``experiments.convert``)
and by the leakage filter (``experiments.data.leakage``), which keeps every text of every set out
of the pretraining corpus.

=================  ================================================  ==========================
set                file (under ASSETS_DIR)                            reader
=================  ================================================  ==========================
wnut16             wnut16/ner.txt (``token<TAB>TAG``, IOB2)           `read_iob_file`
sentence_polarity  sentence_polarity/snippets.csv (``label,text``)    `read_polarity_csv`
rt_snippets        rt_snippets/movieReviewSnippets_GroundTruth.txt    `read_rated_snippets`
=================  ================================================  ==========================

Each reader checks its file and raises ``ExperimentError`` naming the line of a row not in
the format; ``DOWNSTREAM`` gives each set's file and the function giving its texts.
"""

import bisect
import csv
import io
import re
from pathlib import Path
from typing import Callable

from experiments.data.inputs import require_items
from experiments.errors import ExperimentError
from experiments.files import read_utf8

IOB2_TAG = re.compile(r"^(O|[BI]-\S+)$")

# A tweet: its tokens and their IOB2 tags.
Sentence = tuple[list[str], list[str]]


def read_iob_file(path: Path) -> list[Sentence]:
    """Read ``token<TAB>TAG`` lines into one ``(tokens, tags)`` pair per tweet.

    Raises ``ExperimentError`` naming the line number for a line that is neither a
    tweet break nor exactly one non-empty token, a tab and an IOB2 tag.
    """
    sentences: list[Sentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    for line_number, line in enumerate(read_utf8(path, "WNUT token<TAB>TAG lines").split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            if tokens:
                sentences.append((tokens, tags))
                tokens, tags = [], []
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not IOB2_TAG.match(fields[1]):
            raise ExperimentError(
                f"{path}:{line_number}",
                found=repr(line),
                expected="'token<TAB>TAG' with an IOB2 tag (O, B-<label> or I-<label>) or a tweet break (a lone tab)",
            )
        tokens.append(fields[0])
        tags.append(fields[1])
    if tokens:
        sentences.append((tokens, tags))
    require_items(sentences, path, "tweets")
    return sentences


LABELS = {"1": "POSITIVE", "-1": "NEGATIVE"}


def read_polarity_csv(path: Path) -> list[tuple[str, str]]:
    """Read ``(label, text)`` rows, the label mapped to POSITIVE / NEGATIVE.

    Raises ``ExperimentError`` naming the line for a row that does not have
    exactly two fields, a label ``1`` / ``-1`` and a non-empty text.
    """
    rows = []
    reader = csv.reader(io.StringIO(read_utf8(path, "CSV rows label,text", "utf-8-sig"), newline=""))
    for row in reader:
        if not row:
            continue
        if len(row) != 2 or row[0].strip() not in LABELS or not row[1].strip():
            raise ExperimentError(
                f"{path}:{reader.line_num}",
                expected="'label,text' with label 1 or -1 and a non-empty text",
                found=repr(row),
            )
        rows.append((LABELS[row[0].strip()], " ".join(row[1].split())))
    require_items(rows, path, "'label,text' rows")
    return rows


CATEGORIES = ("VERY_NEGATIVE", "NEGATIVE", "NEUTRAL", "POSITIVE", "VERY_POSITIVE")
CUT_POINTS = (-2.0, -1.0, 1.0, 2.0)
RATING_RANGE = (-4.0, 4.0)


def rating_to_label(rating: float) -> str:
    """The class of a mean rating; a rating on a cut point goes to the more extreme class."""
    if not RATING_RANGE[0] <= rating <= RATING_RANGE[1]:
        raise ValueError(f"rating {rating} is outside {RATING_RANGE}")
    if rating < 0:  # -2 -> VERY_NEGATIVE, -1 -> NEGATIVE
        return CATEGORIES[bisect.bisect_left(CUT_POINTS, rating)]
    return CATEGORIES[bisect.bisect_right(CUT_POINTS, rating)]  # 1 -> POSITIVE, 2 -> VERY_POSITIVE


def read_rated_snippets(path: Path) -> list[tuple[str, float, str]]:
    """Read ``(id, rating, text)`` rows of the ``id<TAB>rating<TAB>text`` file.

    A leading byte-order mark and CRLF line ends are accepted. Raises
    ``ExperimentError`` naming the line for a row without three fields, a numeric
    rating in -4 ... +4 and a non-empty text.
    """
    rows = []
    text = read_utf8(path, "id<TAB>rating<TAB>text rows", "utf-8-sig")
    for line_num, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t", 2)
        try:
            if len(fields) != 3 or not fields[2].strip():
                raise ValueError("expected three tab-separated fields and a non-empty text")
            rating = float(fields[1])
            rating_to_label(rating)
        except ValueError as err:
            raise ExperimentError(
                f"{path}:{line_num}",
                expected=f"'id<TAB>rating<TAB>text' with a rating in {RATING_RANGE}",
                found=f"{line[:80]!r} ({err})",
            ) from None
        rows.append((fields[0].strip(), rating, " ".join(fields[2].split())))
    require_items(rows, path, "rated snippets")
    return rows


def wnut_texts(path: Path) -> list[str]:
    return [" ".join(tokens) for tokens, _tags in read_iob_file(path)]


def polarity_texts(path: Path) -> list[str]:
    return [text for _label, text in read_polarity_csv(path)]


def rated_snippet_texts(path: Path) -> list[str]:
    return [text for _id, _rating, text in read_rated_snippets(path)]


# Every downstream set: its file under the assets folder and the texts it holds (all splits).
DOWNSTREAM: dict[str, tuple[str, Callable[[Path], list[str]]]] = {
    "wnut16": ("wnut16/ner.txt", wnut_texts),
    "sentence_polarity": ("sentence_polarity/snippets.csv", polarity_texts),
    "rt_snippets": ("rt_snippets/movieReviewSnippets_GroundTruth.txt", rated_snippet_texts),
}
