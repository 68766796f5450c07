"""The files of a pretraining run in OUTPUT_DIR, and the rule that protects them.

    config.cfg      the run's config, every setting filled in (written first)
    vocab.txt       the output vocabulary
    checkpoint.pt   the last good training state (see checkpoint.py)
    log.jsonl       one JSON record per log interval and per dev evaluation
    curves.png      training and dev perplexity, drawn at the end
    model/          the export: options.json, weights.hdf5, vocab.txt,
                    softmax.hdf5, pretrain.json
    prepared/       the tokenised corpora, unless corpus.prepared_dir says otherwise

A folder holding anything else is never written to, and a folder holding a
run is only continued with ``resume``, and only by the same run: the same
data, tokenizer, vocabulary, architecture, softmax and seed. The ``[training]``
settings (steps, learning rate, clipping…) and ``system.threads`` may change
on resume, e.g. to continue past a diverged loss with a lower learning rate.
"""
from pathlib import Path
from typing import Any, Dict, List, Tuple, Union

from confection import Config

from ..errors import ElmoError, Errors
from ..util import atomic_path
from .config import PretrainConfig

# What may change when a run is resumed: (section, first key) or a whole section.
_FREE_SETTINGS = {("system", "threads"), ("training", None)}


class RunDir:
    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)

    config = property(lambda self: self.path / "config.cfg")
    vocab = property(lambda self: self.path / "vocab.txt")
    checkpoint = property(lambda self: self.path / "checkpoint.pt")
    log = property(lambda self: self.path / "log.jsonl")
    plot = property(lambda self: self.path / "curves.png")
    model = property(lambda self: self.path / "model")

    def prepared(self, config: PretrainConfig) -> Path:
        return Path(config.corpus.prepared_dir) if config.corpus.prepared_dir else self.path / "prepared"

    def claim(self, config: PretrainConfig, resume: bool) -> List[str]:
        """Check that this run may write here and record its config.

        RETURNS: the settings that changed since the run was started.
        """
        if self.path.exists() and not self.path.is_dir():
            raise ElmoError("E306", Errors.E306.format(path=self.path, found="a file"))
        entries = sorted(p.name for p in self.path.iterdir()) if self.path.exists() else []
        if not entries:
            self.path.mkdir(parents=True, exist_ok=True)
            self._write_config(config)
            return []
        if not self.config.exists():
            raise ElmoError("E306", Errors.E306.format(path=self.path, found=", ".join(entries[:5])))
        if not resume:
            raise ElmoError("E307", Errors.E307.format(path=self.path))
        stored = PretrainConfig.from_dict(dict(Config().from_disk(self.config, interpolate=False)))
        differences = _differences(stored.to_dict(), config.to_dict())
        fixed = [d for section, key, d in differences if (section, key) not in _FREE_SETTINGS
                 and (section, None) not in _FREE_SETTINGS]
        if fixed:
            raise ElmoError("E308", Errors.E308.format(path=self.path, differences="; ".join(fixed[:10])))
        self._write_config(config)
        return [d for _, _, d in differences]

    def _write_config(self, config: PretrainConfig) -> None:
        with atomic_path(self.config) as tmp:
            config.to_config().to_disk(tmp)


def _differences(old: Dict[str, Any], new: Dict[str, Any]) -> List[Tuple[str, str, str]]:
    """(section, first key, description) of each setting that differs."""
    out = []
    for section in sorted(set(old) | set(new)):
        a, b = _flatten(old.get(section, {})), _flatten(new.get(section, {}))
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out.append((section, key.split(".")[0], f"{section}.{key}: {a.get(key)!r} -> {b.get(key)!r}"))
    return out


def _flatten(section: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    flat = {}
    for key, value in section.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
