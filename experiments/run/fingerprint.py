"""What a finished training run depends on, so that a changed input retrains it.

A run (one seed of one config) is skipped only when its stored fingerprint equals
the fingerprint of what would be trained now:

* the config as spaCy would train it: the file with every override (the seed
  included) applied and the variables interpolated, so a changed setting, a changed
  default inside the config file or another ``--training.max_steps`` all count;
* the content of every file or folder that the config's ``[paths]`` name (the
  training and dev data, the biLM folder, the vectors): a biLM tuned again since,
  or a data split converted again, changes the run;
* the spaCy and spacy-elmo versions that trained it.

The fingerprint is a dict of digests, stored as ``fingerprint.json`` beside the
run's ``model-best``; ``changed()`` names the parts that differ, for the message.
"""
import hashlib
import json
from pathlib import Path
from typing import Dict, List, Optional

import spacy
from spacy.util import load_config

import spacy_elmo
from experiments.data.archive import file_sha256

FINGERPRINT_FILE = "fingerprint.json"


def file_digest(path: Path) -> str:
    """The sha256 of a file's bytes, or of a folder's files (their relative names and digests, sorted)."""
    if not path.is_dir():
        return file_sha256(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\n".encode())
    return digest.hexdigest()


def run_fingerprint(config_path: Path, overrides: Dict[str, object]) -> Dict[str, str]:
    """The digests of everything a run of ``config_path`` with ``overrides`` depends on."""
    config = load_config(config_path, overrides=overrides, interpolate=True)
    fingerprint = {
        "config": hashlib.sha256(config.to_str().encode("utf-8")).hexdigest(),
        "versions": f"spacy {spacy.__version__}, spacy-elmo {spacy_elmo.__version__}",
    }
    for name, value in sorted(config.get("paths", {}).items()):
        if isinstance(value, str) and value and Path(value).exists():
            fingerprint[f"paths.{name}"] = file_digest(Path(value))
    return fingerprint


def read_fingerprint(run_dir: Path) -> Optional[Dict[str, str]]:
    """The fingerprint stored with a run, or None when there is none or it is unreadable."""
    try:
        stored = json.loads((run_dir / FINGERPRINT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def changed(stored: Optional[Dict[str, str]], current: Dict[str, str]) -> List[str]:
    """The parts of ``current`` that ``stored`` does not match (all of them when nothing is stored)."""
    if stored is None:
        return ["no fingerprint stored with the run"]
    keys = sorted(set(stored) | set(current))
    return [key for key in keys if stored.get(key) != current.get(key)]


def write_fingerprint(run_dir: Path, fingerprint: Dict[str, str]) -> None:
    (run_dir / FINGERPRINT_FILE).write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n", encoding="utf-8")
