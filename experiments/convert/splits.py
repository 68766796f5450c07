"""The seeded train/dev/test splits that every task converter uses.

* ``seeded_subset`` and ``split_indices`` give the fixed, seeded split that the
  NER, textcat and sentiment converters share, so a given seed always yields the
  same split of the same input.
* ``write_splits`` writes ``{train,dev,test}.spacy`` DocBins, each atomically.
"""
import random
from pathlib import Path
from typing import Dict, List, Union

from spacy.tokens import Doc, DocBin

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
        raise ValueError(
            f"bad split fractions: dev={dev_fraction}, test={test_fraction}"
        )
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
