"""Writes that find no room (a full disk, a quota, the file-size limit): a
coded error (E525) that names the file, not a bare OSError.

Python ignores SIGXFSZ, so a write past ``ulimit -f`` fails with EFBIG as a
write to a full disk fails with ENOSPC. h5py reports both as an OSError or a
RuntimeError whose message carries ``errno = N``; torch's checkpoint writer as
a RuntimeError with no errno at all (see `any_failure`).
"""
import errno
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

from ..errors import ElmoError, OutputError

NO_ROOM = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
_ERRNO_IN_MESSAGE = re.compile(r"errno = (\d+)")


@contextmanager
def writing(path: Union[str, Path], any_failure: bool = False) -> Iterator[None]:
    """Within the block, a write that finds no room for `path` is E525.

    any_failure: also take a RuntimeError that gives no reason as no room
    (torch.save's, whose only way to fail on a payload of tensors is the write).
    The block removes its own temporary files (atomic_path does).
    """
    try:
        yield
    except (OSError, RuntimeError) as err:
        if isinstance(err, ElmoError):
            raise
        code = _errno(err)
        if code in NO_ROOM:
            reason = os.strerror(code)
        elif code is None and any_failure and isinstance(err, RuntimeError):
            reason = f"the write failed ({str(err).strip()})"
        else:
            raise
        raise OutputError("E525", path=path, reason=reason) from err


def _errno(err: BaseException) -> Optional[int]:
    if isinstance(err, OSError) and err.errno is not None:
        return err.errno
    found = _ERRNO_IN_MESSAGE.search(str(err))  # h5py: "... errno = 27, error message = 'File too large'"
    return int(found.group(1)) if found else None
