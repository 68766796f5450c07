"""The files of a pretraining run in OUTPUT_DIR, and the rule that protects them.

    config.cfg      the run's config, every setting filled in (written first)
    inputs.json     the training and dev files the run started on: path, size, SHA-256
    vocab.txt       the output vocabulary
    checkpoint.pt   the last good training state (see checkpoint.py)
    log.jsonl       one JSON record per log interval and per dev evaluation
    curves.png      training and dev perplexity, drawn at the end
    model/          the export: options.json, weights.hdf5, vocab.txt,
                    softmax.hdf5, pretrain.json
    prepared/       the tokenised corpora, unless corpus.prepared_dir says otherwise

    .lock           held by the process running the run (filelock)
    .lock.holder    who holds it: pid, host, start time (JSON)

A folder holding anything else is never written to, and a folder holding a
run is only continued with ``resume``, and only by the same run: the same
data, tokenizer, vocabulary, architecture, softmax and seed. The ``[training]``
settings (steps, learning rate, clipping…) and ``system.threads`` may change
on resume, e.g. to continue past a diverged loss with a lower learning rate,
but not the optimiser or ``tokens_per_batch``, which the checkpoint's state is
made for (E308); changed optimiser settings are the ones used from then on.
The data is checked by content: a file changed, added or removed since the
run started stops ``resume`` (E316), and a damaged config.cfg or inputs.json
is named (E317).
A run that stopped before its first checkpoint saved nothing worth keeping:
its folder is taken over by the next run, with or without ``resume``.

One process at a time: `lock` holds ``.lock`` (filelock's `FileLock`: an
exclusive ``flock`` on Unix, ``msvcrt.locking`` on Windows) for the whole run.
The operating system releases it when the process ends, even by kill -9, so a
stopped run never leaves a stale lock; the holder's ``.lock.holder`` it leaves
behind only names it until the next run takes the lock and writes its own.
"""
import json
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple, Union

import torch
from confection import ConfigValidationError
from filelock import FileLock, Timeout

from ...errors import ConfigError, DamagedFileError, InputError, OutputError
from ...util import atomic_path, file_digest, make_parent_dir
from .config import PretrainConfig, read_cfg
from ...disk import RUN_FILE, writing
from ..data.vocab import LMVocab

LOCK_NAME = ".lock"
HOLDER_NAME = ".lock.holder"

# What may change when a run is resumed: (section, first key) or a whole section;
_FREE_SETTINGS = {("system", "threads"), ("training", None)}
# but not these, which the checkpoint's state is made for: the optimiser's kind (its
# state is that optimiser's) and the batch size (the position in an epoch is a count of
# its batches).
_FIXED_SETTINGS = {"training.optimizer.@pretrain_optimizers", "training.tokens_per_batch"}


class RunDir:
    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)

    config = property(lambda self: self.path / "config.cfg")
    inputs = property(lambda self: self.path / "inputs.json")
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
            raise OutputError("E306", path=self.path, found="a file")
        entries = sorted(p.name for p in self.path.iterdir()) if self.path.exists() else []
        return [name for name in entries if name not in (LOCK_NAME, HOLDER_NAME)]

    def _check_not_foreign(self) -> None:
        entries = self._entries()
        if entries and not self.config.exists():
            raise OutputError("E306", path=self.path, found=", ".join(entries[:5]))

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder (creating it) for this process while the block runs.

        Another process holding it is a coded error (E503) that names it: its
        pid, host and start time, which the holder writes into ``.lock.holder``.
        The folder's contents are judged (E306) once the lock is held, when no
        run of ours is writing there; a folder no run has locked is judged
        before, so that nothing, not even the lock, is written into another's.
        """
        lock_path = self.path / LOCK_NAME
        if not lock_path.exists():
            self._check_not_foreign()
        make_parent_dir(lock_path)
        lock = FileLock(lock_path)
        try:
            lock.acquire(blocking=False)
        except Timeout as err:
            raise OutputError("E503", path=self.path, holder=_holder(self.path / HOLDER_NAME)) from err
        try:
            self._check_not_foreign()
        except OutputError:
            lock.release()
            raise
        try:
            holder = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
            with atomic_path(self.path / HOLDER_NAME) as tmp:
                tmp.write_text(json.dumps(holder) + "\n", encoding="utf8")
            yield
        finally:
            (self.path / HOLDER_NAME).unlink(missing_ok=True)
            lock.release()

    def claim(self, config: PretrainConfig, resume: bool, files: "InputFiles") -> List[str]:
        """Check that this run may write here and record its config and its
        input `files` (as the run lists them, once).

        RETURNS: the settings that changed since the run was started.
        """
        entries = self._entries()
        if not entries or (self.config.exists() and not self.has_progress):
            self.path.mkdir(parents=True, exist_ok=True)
            self._write_config(config)
            self._write_inputs(input_record(files))
            return []
        if not self.config.exists():
            raise OutputError("E306", path=self.path, found=", ".join(entries[:5]))
        if not resume:
            raise OutputError("E307", path=self.path)
        differences = _differences(self.stored_config().to_dict(), config.to_dict())
        fixed = [d for section, key, d in differences if d.split(":")[0] in _FIXED_SETTINGS or (
            (section, key) not in _FREE_SETTINGS and (section, None) not in _FREE_SETTINGS)]
        if fixed:
            raise ConfigError("E308", path=self.path, differences="; ".join(fixed[:10]))
        record = input_record(files)
        if self.inputs.exists():
            self._check_inputs(record)
        self._write_config(config)
        if not self.inputs.exists():  # a run started by an earlier version: recorded from now on
            self._write_inputs(record)
        return [d for _, _, d in differences]

    def stored_config(self) -> PretrainConfig:
        """The config the run was started with; E317 if the file is damaged."""
        def damaged(reason: str) -> DamagedFileError:
            return self._damaged("config", self.config, reason, fix=(
                "Put back a copy of it, or copy over it the .cfg file the run was started with (when it was "
                "started without --section.key overrides), or start the run anew in another folder."
            ))

        try:
            return PretrainConfig.from_dict(dict(read_cfg(self.config, interpolate=False, error=damaged)))
        except ConfigValidationError as err:
            raise damaged("; ".join(f"{' -> '.join(e['loc'])}: {e['msg']}" for e in (err.errors or [])[:5])) from None

    def _check_inputs(self, files: Dict[str, List[Dict[str, Any]]]) -> None:
        """E316 for the first file that differs from the record of the run's start."""
        try:
            stored = json.loads(self.inputs.read_bytes().decode("utf8"))
            recorded = {key: {f["path"]: f for f in stored[key]} for key in files}
        except (ValueError, KeyError, TypeError) as err:
            raise self._damaged("record of its data", self.inputs, f"{type(err).__name__}: {err}", fix=(
                "Remove it and run again with --resume: the data is then recorded anew, as it is now "
                "(unchecked, so only if you know it has not changed)."
            )) from None
        for key, now in files.items():
            before = recorded[key]
            for f in now:
                old = before.get(f["path"])
                if old is None:
                    change, detail = "was added", f"{f['size']:,} bytes"
                elif (old.get("size"), old.get("sha256")) != (f["size"], f["sha256"]):
                    change = "changed"
                    detail = (f"then {old.get('size'):,} bytes, SHA-256 {str(old.get('sha256'))[:12]}…; "
                              f"now {f['size']:,} bytes, SHA-256 {f['sha256'][:12]}…")
                else:
                    continue
                raise self._changed(key, f["path"], change, detail)
            gone = sorted(set(before) - {f["path"] for f in now})
            if gone:
                raise self._changed(key, gone[0], "was removed", f"it had {before[gone[0]].get('size', 0):,} bytes")

    def _changed(self, key: str, path: str, change: str, detail: str) -> InputError:
        return InputError("E316", which=f"paths.{key}", path=path, change=change,
                                                    run=self.path, detail=detail, record=self.inputs)

    def read_vocab(self) -> LMVocab:
        """The run's output vocabulary; E317 if it is missing or not a vocabulary."""
        if not self.vocab.exists():
            raise self.damaged_vocab("it is missing")
        try:
            return LMVocab.from_file(self.vocab)
        except DamagedFileError as err:
            raise self.damaged_vocab(str(err)) from err

    def check_checkpoint_vocab(self, payload: Dict[str, Any], vocab: LMVocab, lm: torch.nn.Module) -> None:
        """E317 unless `vocab` (the run's vocab.txt) is the one the checkpoint `payload` was
        trained with: by its digest, or, in a checkpoint with none, by the softmax's shapes."""
        saved = payload.get("vocab_sha256")
        if saved is not None and saved != vocab.sha256:
            raise self.damaged_vocab(
                f"its {len(vocab):,} entries are not those the checkpoint '{self.checkpoint}' was "
                "trained with (their SHA-256 differs)"
            )
        own = lm.state_dict()
        misfits = [name for name, value in payload["model"].items()
                   if name in own and tuple(own[name].shape) != tuple(value.shape)]
        if misfits and all(name.startswith("softmax.") for name in misfits):  # a checkpoint with no digest
            raise self.damaged_vocab(
                f"its {len(vocab):,} entries do not fit the softmax of the checkpoint "
                f"'{self.checkpoint}' ({misfits[0]}: {tuple(payload['model'][misfits[0]].shape)})"
            )

    def damaged_vocab(self, reason: str) -> DamagedFileError:
        return self._damaged("vocabulary", self.vocab, reason, fix=(
            "Remove it and run again with --resume: the run counts it again from the training text (or "
            "copies vocab.path), and the checkpoint checks that it is the same."
        ))

    @staticmethod
    def _damaged(what: str, path: Path, reason: str, fix: str) -> DamagedFileError:
        return DamagedFileError("E317", what=what, path=path, reason=reason, fix=fix)

    def _write_config(self, config: PretrainConfig) -> None:
        with writing(self.config, code=RUN_FILE), atomic_path(self.config) as tmp:
            config.to_config().to_disk(tmp)

    def _write_inputs(self, files: Dict[str, List[Dict[str, Any]]]) -> None:
        with writing(self.inputs, code=RUN_FILE), atomic_path(self.inputs) as tmp:
            tmp.write_text(json.dumps(files, indent=1), encoding="utf8")


@dataclass(frozen=True)
class InputFiles:
    """The text files a run reads, listed once per run (`find_files` of
    paths.train and paths.dev) and handed to everything that reads them."""

    train: List[Path]
    dev: List[Path]


def input_record(files: InputFiles) -> Dict[str, List[Dict[str, Any]]]:
    """The training and dev files, each with its size and SHA-256 (exact,
    and about a second for 100 MB of text)."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for key, listed in (("train", files.train), ("dev", files.dev)):
        out[key] = []
        for path in listed:
            out[key].append({"path": str(path), **file_digest(path)})
    return out


def _holder(path: Path) -> str:
    """Who holds the lock, as its holder file says."""
    try:
        info = json.loads(path.read_bytes().decode("utf8"))
        return f"pid {info['pid']} on {info['host']}, running since {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet written its name into the lock's holder file"


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
