"""The one guard for every writer: a write that finds no room (a full disk, a
quota, the file-size limit) or no permission (a read-only folder or disk) is a
coded error that names the file, never a bare OSError nor a crash.

    writing(path)            around any write: plain files, torch.save,
                             atomic_path / swap_directory (their temporaries
                             go with the error)
    hdf5_writer(tmp, path)   an HDF5 file open for writing, through a file
                             object that keeps a failed write from HDF5

No room is E513 (an output file or folder: the weights, the softmax, an
export, embed's vectors), or E525 for a pretraining run's own files (the code
of the run's writers, `RUN_FILE`); no permission is E514.

Python ignores SIGXFSZ, so a write past ``ulimit -f`` fails with EFBIG as a
write to a full disk fails with ENOSPC. h5py reports both as an OSError or a
RuntimeError whose message carries ``errno = N``; torch's checkpoint writer as
a RuntimeError with no errno at all (see `writing`'s any_failure). HDF5 itself
does not recover from a failed write: it reports an error for every object it
then closes, and the interpreter can crash (a segfault at exit), so HDF5 files
are written only through `hdf5_writer`.
"""

import errno
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Tuple, Union

import h5py

from .errors import ElmoError, OutputError

NO_ROOM = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
OUTPUT_FILE = "E513"  # an output the user asked for
RUN_FILE = "E525"  # a file of a pretraining run (its message says how to resume)
_WRITE_FAILURES = frozenset({OUTPUT_FILE, RUN_FILE, "E514"})
_ERRNO_IN_MESSAGE = re.compile(r"errno = (\d+)")


@contextmanager
def writing(path: Union[str, Path], *, code: str = OUTPUT_FILE, any_failure: bool = False) -> Iterator[None]:
    """Within the block, a write for `path` that finds no room is `code`
    (E513 or E525), one that finds no permission E514. A guard around others
    names its own path: the export's folder, say, not the temporary file
    inside it where the write failed.

    any_failure: also take a RuntimeError that gives no reason as no room
    (torch.save's, whose only way to fail on a payload of tensors is the write).
    The block removes its own temporary files (atomic_path does).
    """
    try:
        yield
    except (OSError, RuntimeError, OutputError) as err:
        cause = err.__cause__ if isinstance(err, ElmoError) else err
        if isinstance(err, ElmoError) and not (err.code in _WRITE_FAILURES and isinstance(cause, OSError)):
            raise
        coded = _coded(cause, Path(path), code, any_failure)
        if coded is cause:
            raise
        raise coded from cause


def _coded(err: BaseException, path: Path, code: str, any_failure: bool = False) -> BaseException:
    """The coded error for a failed write of `path`, or `err` itself when it is no write failure."""
    number = _errno(err)
    if number in NO_ROOM:
        return _no_room(code, path, os.strerror(number))
    if number in NOT_WRITABLE:
        folder = next((p for p in path.parents if p.is_dir()), path.parent)
        return OutputError("E514", path=path, reason=os.strerror(number), folder=folder)
    if number is None and any_failure and isinstance(err, RuntimeError):
        return _no_room(code, path, f"the write failed ({str(err).strip()})")
    return err


def _no_room(code: str, path: Path, reason: str) -> OutputError:
    if code == RUN_FILE:
        return OutputError("E525", path=path, reason=reason)
    return OutputError("E513", path=path, reason=reason)


def _errno(err: BaseException) -> Optional[int]:
    if isinstance(err, OSError) and err.errno is not None:
        return err.errno
    found = _ERRNO_IN_MESSAGE.search(str(err))  # h5py: "... errno = 27, error message = 'File too large'"
    return int(found.group(1)) if found else None


class _WriteGuard:
    """A binary file for h5py that keeps a failed write from HDF5. The first
    error is kept in `error`, and every later write is dropped: the file is
    garbage from then on, and the caller discards it."""

    def __init__(self, path: Path):
        self._file = open(path, "w+b", buffering=0)
        self.error: Optional[OSError] = None

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        if self.error is None:
            try:
                written = 0
                while written < len(view):
                    written += self._file.write(view[written:])
            except OSError as err:
                self.error = err
        return len(view)

    def truncate(self, size: Optional[int] = None) -> int:
        if self.error is None:
            try:
                return self._file.truncate(size)
            except OSError as err:
                self.error = err
        return self._file.tell() if size is None else size

    def read(self, size: int = -1) -> bytes:
        return self._file.read(size)

    def readinto(self, buffer) -> int:
        return self._file.readinto(buffer)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def flush(self) -> None:
        pass  # unbuffered

    def close(self) -> None:
        self._file.close()


@contextmanager
def hdf5_writer(
    path: Union[str, Path],
    output_path: Union[str, Path, None] = None,
    check_stop: Callable[[], None] = lambda: None,
    *,
    code: str = OUTPUT_FILE,
) -> Iterator[Tuple[h5py.File, Callable[[], None]]]:
    """An HDF5 file open for writing at `path` (a temporary, usually), and a
    check to call between writes: it calls `check_stop`, and raises `code`
    (naming `output_path`, by default `path`) once a write has failed. A
    failure while closing raises it too; opening a file where none can be
    created is E514."""
    output_path = Path(output_path if output_path is not None else path)
    try:
        guard = _WriteGuard(Path(path))
    except OSError as err:
        raise _coded(err, output_path, code) from err

    def failed() -> ElmoError:
        err = guard.error
        coded = _coded(err, output_path, code)
        return coded if isinstance(coded, ElmoError) else _no_room(code, output_path, err.strerror or str(err))

    def check() -> None:
        check_stop()
        if guard.error is not None:
            raise failed() from guard.error

    try:
        with h5py.File(guard, "w") as fout:
            yield fout, check
    except ElmoError:
        raise
    except (OSError, RuntimeError, ValueError):  # what HDF5 makes of dropped writes, closing included
        if guard.error is None:
            raise
        raise failed() from guard.error
    finally:
        guard.close()
    check()
