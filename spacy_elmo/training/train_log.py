"""The JSONL training log: one record a line, ``"kind": "train"`` or ``"dev"``."""
import json
from pathlib import Path
from typing import Any, Dict, List, Union

from ..util import atomic_path


class TrainLog:
    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)

    def records(self) -> List[Dict[str, Any]]:
        if not self.path.exists():
            return []
        records = []
        with self.path.open(encoding="utf8") as f:
            for line in f:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut short by a kill
                    continue
        return records

    def truncate(self, step: int) -> None:
        """Forget the records after `step` (a resumed run writes them again)."""
        kept = [r for r in self.records() if r.get("step", 0) <= step]
        with atomic_path(self.path) as tmp:
            tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf8")

    def write(self, record: Dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf8") as f:
            f.write(json.dumps(record) + "\n")
