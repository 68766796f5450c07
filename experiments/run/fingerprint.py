"""What a finished training run depends on, so that a changed input retrains it.

A run (one seed of one config) is skipped only when its stored fingerprint equals
the fingerprint of what would be trained now:

* the config as spaCy would train it: the file with every override (the seed
  included) applied and the variables interpolated, so a changed setting, a changed
  default inside the config file or another ``--training.max_steps`` all count;
* the content of every file or folder that the resolved config names (the
  training and dev data, the biLM folder, the vectors), under ``[paths]`` or
  anywhere else (``initialize.components.elmo.options_file``): a biLM tuned again
  since, or a data split converted again, changes the run;
* the spaCy and spacy-elmo versions that trained it.

It is the studies' engine's fingerprint of a training (``experiments.engine.run``);
the engine's own runs also fingerprint their test split. It is a dict of digests, stored as ``fingerprint.json`` beside the
run's ``model-best``; ``changed()`` names the parts that differ, for the message.
"""
import json
from pathlib import Path
from typing import Dict, Optional

from experiments.engine.run import changed, config_fingerprint
from experiments.engine.run import digest as file_digest

FINGERPRINT_FILE = "fingerprint.json"
__all__ = ["FINGERPRINT_FILE", "changed", "file_digest", "read_fingerprint", "run_fingerprint", "write_fingerprint"]


def run_fingerprint(config_path: Path, overrides: Dict[str, object]) -> Dict[str, str]:
    """The digests of everything a run of ``config_path`` with ``overrides`` depends on."""
    return config_fingerprint(str(config_path), overrides)


def read_fingerprint(run_dir: Path) -> Optional[Dict[str, str]]:
    """The fingerprint stored with a run, or None when there is none or it is unreadable."""
    try:
        stored = json.loads((run_dir / FINGERPRINT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def write_fingerprint(run_dir: Path, fingerprint: Dict[str, str]) -> None:
    (run_dir / FINGERPRINT_FILE).write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n", encoding="utf-8")
