"""The JSONL training log: one record a line, ``"kind": "train"``, ``"dev"`` or ``"stopped"``.

Read and written with the standard library's ``json``, not srsly's JSONL
functions: srsly's ujson writes floats with nine decimals (a learning rate of
1e-12 becomes 0.0) and reads 0.006666666666666666 as 0.006666666666666, and
`truncate` writes back what it read, so a resumed run's log would differ from
an uninterrupted one's (tests/training/test_pretrain.py checks they are equal).

A line that is not a JSON object in UTF-8 (cut short by a kill, or damaged)
is skipped and counted in `skipped`; `truncate` leaves it out.
"""
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

from ...util import atomic_path
from ...disk import RUN_FILE, writing
from ..objective.scoring import Perplexity


class TrainLog:
    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)
        self.skipped = 0  # lines the last `records` could not read

    def records(self) -> List[Dict[str, Any]]:
        self.skipped = 0
        if not self.path.exists():
            return []
        records = []
        with self.path.open("rb") as f:
            for line in f:
                record = _parse(line)
                if record is not None:
                    records.append(record)
                elif line.strip():
                    self.skipped += 1
        return records

    def train_perplexity_at(self, step: int) -> Optional[float]:
        """The training perplexity last recorded at or before `step` (None if none was)."""
        train = [r for r in self.records() if r.get("kind") == "train" and r.get("step", 0) <= step]
        return float(train[-1]["ppl"]) if train else None

    def dev_at(self, step: int) -> Optional[Perplexity]:
        """The dev perplexity recorded at `step` (None where the run did not evaluate there)."""
        for r in self.records():
            if r.get("kind") == "dev" and r.get("step") == step and set(_DEV_FIELDS.values()) <= r.keys():
                return Perplexity(**{field: r[key] for field, key in _DEV_FIELDS.items()})
        return None

    def truncate(self, step: int) -> None:
        """Forget the records after `step` (a resumed run writes them again)."""
        kept = [r for r in self.records() if r.get("step", 0) <= step]
        with writing(self.path, code=RUN_FILE), atomic_path(self.path) as tmp:
            tmp.write_text(_lines(kept), encoding="utf8")

    def write(self, record: Dict[str, Any]) -> None:
        with writing(self.path, code=RUN_FILE), self.path.open("a+b") as f:  # appends go to the end whatever was read
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 1))
            # A line cut short by a kill gets its end, so that this record starts a line of its own.
            cut = size > 0 and f.read(1) != b"\n"
            f.write((("\n" if cut else "") + _lines([record])).encode("utf8"))


# A dev record's names for the figures of its Perplexity (Trainer._evaluate_and_log writes them).
_DEV_FIELDS = {"forward": "ppl_forward", "backward": "ppl_backward", "mean": "ppl", "tokens": "dev_tokens"}


def _parse(line: bytes) -> Optional[Dict[str, Any]]:
    try:
        record = json.loads(line.decode("utf8")) if line.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):  # a line cut short by a kill, or damaged
        return None
    return record if isinstance(record, dict) else None


def _lines(records: Iterable[Dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
