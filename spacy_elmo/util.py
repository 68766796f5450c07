"""Small helpers shared across the package (standard library only)."""

import errno
import glob
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Dict, Iterator, List, Optional, Union

from .errors import OutputError

# A line ends at "\r\n", "\n" or a lone "\r" (Python's universal newlines), in every reader.
_LINE_END = re.compile(rb"\r\n|\r|\n")
_WHITESPACE = b" \t\x0b\x0c"
_BLOCK = 1 << 16
_HOST = re.sub(r"[^A-Za-z0-9-]", "_", socket.gethostname())[:40] or "host"


@contextmanager
def atomic_path(target: Union[str, Path]) -> Iterator[Path]:
    """Yield a temporary path beside `target` that replaces it on success.

    A crash or kill before the end leaves `target` as it was. The temporary
    file is named ``.NAME.HOST-PID.RANDOM.tmp``: an exception or Ctrl-C removes
    it at once, and one left by a process that was killed (kill -9) is removed
    by the next write to the same target on the same host, once its process
    is gone.
    """
    target = Path(target)
    with scratch_path(target) as tmp:
        yield tmp
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)


@contextmanager
def scratch_path(target: Union[str, Path]) -> Iterator[Path]:
    """Yield a temporary file beside `target`, named as `atomic_path` names its
    own, and remove it at the end whatever happens (stale ones of dead processes
    go first, as in `atomic_path`)."""
    target = Path(target)
    remove_stale_temporaries(target)
    # The name is chosen before the `try` and the file made inside it, so a
    # SIGTERM (exit_on_sigterm: SystemExit) that lands just as the file appears
    # still removes it.
    tmp = _temporary_name(target)
    try:
        _create_private(tmp)
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def swap_directory(target: Union[str, Path]) -> Iterator[Path]:
    """Yield a new, empty folder beside `target` that takes its place (the
    old folder, if any, removed) once the block ends without an error.

    An error or Ctrl-C removes the new folder and leaves `target` as it was;
    one left by a killed process is removed by the next swap into the same
    target on this host, as `atomic_path` removes its files. The swap is two
    renames (the old folder aside, the new one in), so that it also works
    where a folder cannot be renamed over another (Windows).
    """
    target = Path(target)
    make_parent_dir(target)
    remove_stale_temporaries(target)
    tmp = Path(
        tempfile.mkdtemp(dir=target.parent, prefix=f"{_temporary_prefix(target)}{_HOST}-{os.getpid()}.", suffix=".tmp")
    )
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; give it the mode a plain mkdir would
    aside = tmp.with_name(tmp.name[: -len(".tmp")] + ".old.tmp")
    try:
        yield tmp
        if target.exists():
            target.rename(aside)
        try:
            tmp.rename(target)
        except BaseException:
            if aside.exists() and not target.exists():
                aside.rename(target)  # the old folder back in place
            raise
    finally:
        for path in (tmp, aside):
            if path.exists():
                shutil.rmtree(path)


def _temporary_prefix(target: Path) -> str:
    return f".{target.name}."


def _new_temporary(target: Path) -> Path:
    """A new empty file beside `target`, named ``.NAME.HOST-PID.RANDOM.tmp``."""
    tmp = _temporary_name(target)
    _create_private(tmp)
    return tmp


def _temporary_name(target: Path) -> Path:
    """A name for a temporary beside `target`, ``.NAME.HOST-PID.RANDOM.tmp``
    (64 random bits; not made here: `_create_private` makes it, refusing a
    name that is taken)."""
    return target.parent / f"{_temporary_prefix(target)}{_HOST}-{os.getpid()}.{secrets.token_hex(8)}.tmp"


def _create_private(path: Path) -> None:
    """Make `path` as a new empty file only its owner can read (as mkstemp does);
    FileExistsError if it is there."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def remove_stale_temporaries(target: Union[str, Path]) -> List[Path]:
    """Remove the temporaries of `target` that `atomic_path` left behind in
    processes of this host that no longer run. RETURNS: the removed paths."""
    target = Path(target)
    prefix = _temporary_prefix(target)
    removed = []
    for path in target.parent.glob(glob.escape(prefix) + "*.tmp"):
        owner = path.name[len(prefix) :].split(".", 1)[0]  # HOST-PID
        host, _, pid = owner.rpartition("-")
        if host == _HOST and pid.isdigit() and not _is_running(int(pid)):
            if path.is_dir() and not path.is_symlink():  # swap_directory's
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def make_parent_dir(path: Union[str, Path]) -> None:
    """Create the folder an output file goes into, or say why it cannot be."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as err:
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), path.parent)
        raise OutputError("E510", path=path, reason=f"'{blocker}' is a file, not a folder") from err
    except OSError as err:
        if err.errno in _NOT_WRITABLE:
            folder = next((p for p in path.parents if p.is_dir()), path.parent)
            raise OutputError("E514", path=path, reason=err.strerror, folder=folder) from err
        raise OutputError("E510", path=path, reason=err) from err
    if not path.parent.is_dir():
        raise OutputError("E510", path=path, reason=f"'{path.parent}' is not a folder")


_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def check_writable(path: Union[str, Path]) -> None:
    """Before any long work: create the folder the output file `path` goes
    into and check that a file can be created there (E510, E514), by creating
    and removing a temporary named as `atomic_path` names its own."""
    path = Path(path)
    make_parent_dir(path)
    try:
        _new_temporary(path).unlink()
    except OSError as err:
        raise OutputError("E514", path=path, reason=err.strerror or err, folder=path.parent) from err


def file_digest(path: Union[str, Path]) -> Dict[str, object]:
    """The file's size and SHA-256, read in one pass: {"size": bytes, "sha256": hex}."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):  # hashlib.file_digest is Python 3.11's
            digest.update(block)
        size = os.fstat(f.fileno()).st_size
    return {"size": size, "sha256": digest.hexdigest()}


@contextmanager
def exit_on_sigterm() -> Iterator[Callable[[], None]]:
    """Within the block, SIGTERM raises SystemExit(143) as Ctrl-C raises
    KeyboardInterrupt, so `finally` clauses (temporary files) run; the
    previous handler is put back afterwards. Only the main thread can set
    handlers: elsewhere this does nothing.

    A signal that lands while a C extension calls back into Python (h5py
    does) can have its SystemExit swallowed there ("Exception ignored"), and
    the work would go on. So the block gets a `check()` that raises it again;
    long loops call it once per step.
    """
    received: List[int] = []

    def check() -> None:
        if received:
            raise SystemExit(128 + received[0])

    if threading.current_thread() is not threading.main_thread():
        yield check
        return

    def handler(signum, frame):
        received.append(signum)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield check
    finally:
        signal.signal(signal.SIGTERM, previous)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def split_lines(f: BinaryIO, max_bytes: Optional[int] = None) -> Iterator[bytes]:
    """The lines of the binary file `f`, each with its line end: the one rule
    for where a line ends, for every reader of text (pretraining, perplexity,
    embed). A line ends at "\n", "\r\n" or a lone "\r", as in Python's text
    files (universal newlines); the last line may have no end.

    max_bytes: a line longer than this comes in pieces of at most `max_bytes`,
    each cut after its last space or tab (or, with none, at a UTF-8 character
    boundary), so that one enormous line streams in bounded memory.
    """
    buffer, pos, at_end = b"", 0, False
    while True:
        found = _LINE_END.search(buffer, pos)
        # A "\r" that ends what was read may be the start of a "\r\n": read on first.
        if found is not None and (found.end() < len(buffer) or found.group() != b"\r" or at_end):
            if max_bytes is None or found.end() - pos <= max_bytes:
                yield buffer[pos : found.end()]
                pos = found.end()
                continue
        if max_bytes is not None and len(buffer) - pos > max_bytes:
            cut = _cut(buffer[pos : pos + max_bytes])
            yield buffer[pos : pos + cut]
            pos += cut
            continue
        if at_end:
            if pos < len(buffer):
                yield buffer[pos:]
            return
        block = f.read(max(_BLOCK, max_bytes or 0))
        at_end = not block
        buffer, pos = buffer[pos:] + block, 0


def _cut(window: bytes) -> int:
    """Where to cut a piece of a long line: after its last space or tab, or
    else at the last UTF-8 character boundary."""
    cut = max(window.rfind(bytes([b])) for b in _WHITESPACE) + 1
    if cut > 0:
        return cut
    cut = len(window)
    # Back off over UTF-8 continuation bytes (10xxxxxx) to a character start.
    for _ in range(3):
        if cut > 1 and window[cut - 1] & 0xC0 == 0x80:
            cut -= 1
    if cut > 0 and window[cut - 1] >= 0xC0:
        cut -= 1
    return cut or len(window)
