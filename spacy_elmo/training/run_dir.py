"""The files of a pretraining run in OUTPUT_DIR, and the rule that protects them.

    config.cfg      the run's config, every setting filled in (written first)
    vocab.txt       the output vocabulary
    checkpoint.pt   the last good training state (see checkpoint.py)
    log.jsonl       one JSON record per log interval and per dev evaluation
    curves.png      training and dev perplexity, drawn at the end
    model/          the export: options.json, weights.hdf5, vocab.txt,
                    softmax.hdf5, pretrain.json
    prepared/       the tokenised corpora, unless corpus.prepared_dir says otherwise

    .lock           held (flock) by the process running the run; it says who

A folder holding anything else is never written to, and a folder holding a
run is only continued with ``resume``, and only by the same run: the same
data, tokenizer, vocabulary, architecture, softmax and seed. The ``[training]``
settings (steps, learning rate, clipping…) and ``system.threads`` may change
on resume, e.g. to continue past a diverged loss with a lower learning rate.
A run that stopped before its first checkpoint saved nothing worth keeping:
its folder is taken over by the next run, with or without ``resume``.

One process at a time: `lock` holds an exclusive ``flock`` on ``.lock`` for
the whole run. The operating system releases it when the process ends, even
by kill -9, so a stopped run never leaves a stale lock.
"""
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple, Union

from confection import Config

from ..errors import ElmoError, Errors
from ..util import atomic_path, make_parent_dir
from .config import PretrainConfig

try:
    import fcntl
except ImportError:  # Windows: no flock, and no lock
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"

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

    @property
    def has_progress(self) -> bool:
        """Whether the run here saved anything worth keeping (a checkpoint or an export)."""
        return self.checkpoint.exists() or self.model.exists()

    def _entries(self) -> List[str]:
        if self.path.exists() and not self.path.is_dir():
            raise ElmoError("E306", Errors.E306.format(path=self.path, found="a file"))
        entries = sorted(p.name for p in self.path.iterdir()) if self.path.exists() else []
        return [name for name in entries if name != LOCK_NAME]

    def _check_not_foreign(self) -> None:
        entries = self._entries()
        if entries and not self.config.exists():
            raise ElmoError("E306", Errors.E306.format(path=self.path, found=", ".join(entries[:5])))

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder (creating it) for this process while the block runs.

        Another process holding it is a coded error (E503) that names it: its
        pid, host and start time, which the holder writes into the lock file.
        """
        self._check_not_foreign()  # nothing, not even the lock, is written into another's folder
        make_parent_dir(self.path / LOCK_NAME)
        if fcntl is None:
            yield
            return
        fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as err:
                raise ElmoError("E503", Errors.E503.format(path=self.path, holder=_holder(fd))) from err
            holder = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder).encode("utf8") + b"\n", 0)
            yield
        finally:
            os.close(fd)  # releases the lock

    def claim(self, config: PretrainConfig, resume: bool) -> List[str]:
        """Check that this run may write here and record its config.

        RETURNS: the settings that changed since the run was started.
        """
        entries = self._entries()
        if not entries or (self.config.exists() and not self.has_progress):
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


def _holder(fd: int) -> str:
    """Who holds the lock, as its lock file says."""
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode("utf8"))
        return f"pid {info['pid']} on {info['host']}, running since {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet written its name into the lock file"


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
