"""Every seeded split of the workflow's data.

* ``seeded_subset`` and ``split_indices`` give the fixed, seeded split that the
  NER, textcat and sentiment converters share, so a given seed always yields the
  same split of the same input.
* ``write_splits`` writes ``{train,dev,test}.spacy`` DocBins, each atomically.
* ``split_documents`` holds whole documents of the pretraining corpus out as dev,
  per source; ``to_text`` and ``count_by_source`` write and count them.
"""

import random
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

from spacy.tokens import Doc, DocBin

from experiments.data.text import Document
from experiments.errors import ExperimentError
from experiments.files import write_atomic

SPLIT_NAMES = ("train", "dev", "test")


def seeded_subset(n_items: int, max_items: int, seed: int = 0) -> list[int]:
    """Indices of a seeded random subset of ``max_items`` out of ``n_items``.

    The indices come back in ascending order, so the subset keeps the input's
    order. When ``max_items`` is at least ``n_items`` every index is returned.
    """
    if max_items < 0:
        raise ValueError(f"max_items must be >= 0, got {max_items}")
    if max_items >= n_items:
        return list(range(n_items))
    return sorted(random.Random(seed).sample(range(n_items), max_items))


def split_indices(
    n_items: int, seed: int = 0, dev_fraction: float = 0.1, test_fraction: float = 0.1
) -> dict[str, list[int]]:
    """Shuffle ``range(n_items)`` with ``random.Random(seed)`` and cut it in three.

    Dev and test each get ``round(n_items * fraction)`` items, train gets the
    rest (80/10/10 by default). The three lists are disjoint, their union is
    every index, and each list is sorted so the outputs keep the input order.
    """
    if dev_fraction < 0 or test_fraction < 0 or dev_fraction + test_fraction > 1:
        raise ValueError(f"bad split fractions: dev={dev_fraction}, test={test_fraction}")
    order = list(range(n_items))
    random.Random(seed).shuffle(order)
    n_dev = round(n_items * dev_fraction)
    n_test = round(n_items * test_fraction)
    return {
        "train": sorted(order[n_dev + n_test :]),
        "dev": sorted(order[:n_dev]),
        "test": sorted(order[n_dev : n_dev + n_test]),
    }


def write_splits(output_dir: Union[str, Path], splits: Dict[str, List[Doc]]) -> None:
    """``OUTPUT_DIR/<split>.spacy`` for every split, each written atomically (no user data)."""
    for name, docs in splits.items():
        write_atomic(Path(output_dir) / f"{name}.spacy", DocBin(docs=docs, store_user_data=False).to_bytes())


# --------------------------------------------------------------------------
# The pretraining corpus: whole documents held out per source
# --------------------------------------------------------------------------


def split_documents(
    docs: list[tuple[str, Document]],
    dev_fraction: float = 0.02,
    seed: int = 0,
    max_docs: Optional[int] = None,
    source_order: Sequence[str] = (),
) -> tuple[list[tuple[str, Document]], list[tuple[str, Document]]]:
    """Shuffle whole ``(source, document)`` pairs with ``seed``, cap at ``max_docs``, hold out dev per source.

    Each source's dev set is its first ``round(n * dev_fraction)`` documents
    in the shuffled order (``n`` its documents after the cap), but at least
    one when ``dev_fraction > 0`` and the source has two or more documents.
    Train keeps the shuffled order; dev is grouped by source (``source_order``
    first, the others after them in name order).
    """
    if not 0 <= dev_fraction < 1:
        raise ExperimentError("--dev-fraction", expected="a share in [0, 1)", found=str(dev_fraction))
    if max_docs is not None and max_docs < 1:
        raise ExperimentError("--max-docs", expected="at least 1 (or 0 for all)", found=str(max_docs))
    docs = list(docs)
    random.Random(seed).shuffle(docs)
    if max_docs is not None:
        docs = docs[:max_docs]
    n_docs = Counter(source for source, _doc in docs)
    n_dev = {}
    for source, n in n_docs.items():
        n_dev[source] = round(n * dev_fraction)
        if dev_fraction > 0 and n >= 2:
            n_dev[source] = max(n_dev[source], 1)
    train, dev_by_source = [], {}
    for source, doc in docs:
        held_out = dev_by_source.setdefault(source, [])
        if len(held_out) < n_dev[source]:
            held_out.append((source, doc))
        else:
            train.append((source, doc))
    order = list(source_order) + sorted(set(dev_by_source) - set(source_order))
    dev = [item for source in order for item in dev_by_source.get(source, [])]
    return train, dev


def to_text(docs: Iterable[tuple[str, Document]]) -> str:
    """One paragraph per line, documents one after another."""
    return "".join(line + "\n" for _source, doc in docs for line in doc)


def count_by_source(docs: Iterable[tuple[str, Document]]) -> dict[str, Counter]:
    """Documents, lines and whitespace tokens per source."""
    counts: dict[str, Counter] = {}
    for source, doc in docs:
        counter = counts.setdefault(source, Counter())
        counter["docs"] += 1
        counter["lines"] += len(doc)
        counter["tokens"] += sum(len(line.split()) for line in doc)
    return counts
