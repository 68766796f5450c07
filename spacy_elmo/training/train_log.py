"""The JSONL training log: one record a line, ``"kind": "train"``, ``"dev"`` or ``"stopped"``.

Read with ``srsly.read_jsonl``, which skips a line cut short by a kill (its
ujson reads a float to within a unit in the last place). Written with the
standard library's ``json``, because srsly writes floats with nine decimals:
a learning rate of 1e-12 would be logged as 0.0.
"""
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Union

import srsly

from ..util import atomic_path


class TrainLog:
    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)

    def records(self) -> List[Dict[str, Any]]:
        if not self.path.exists():
            return []
        return list(srsly.read_jsonl(self.path, skip=True))

    def truncate(self, step: int) -> None:
        """Forget the records after `step` (a resumed run writes them again)."""
        kept = [r for r in self.records() if r.get("step", 0) <= step]
        with atomic_path(self.path) as tmp:
            tmp.write_text(_lines(kept), encoding="utf8")

    def write(self, record: Dict[str, Any]) -> None:
        with self.path.open("a+b") as f:
            # A line cut short by a kill gets its end, so that this record starts a line of its own.
            broken = f.seek(0, 2) > 0 and f.seek(-1, 2) >= 0 and f.read(1) != b"\n"
            f.write((("\n" if broken else "") + _lines([record])).encode("utf8"))


def _lines(records: Iterable[Dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
