"""Helpers for the tests of writers that meet a full disk, a file-size limit or a read-only folder."""

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def read_only_folder(tmp_path, how):
    """A folder that this process cannot write to, even as root."""
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root writes to a folder whatever its mode")
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    folder = Path("/sys")  # sysfs: no new files, even for root
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return folder
    pytest.skip("no /sys here, or one where files can be created")


def leftovers(folder: Path):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def check_coded(result: subprocess.CompletedProcess, code: str, name: str) -> None:
    assert result.returncode == 1, f"rc {result.returncode}: {result.stderr[-2000:]}"  # -11/139: a segfault
    said = " ".join(result.stdout.split())  # the message as one line (the CLI wraps it)
    assert code in said and name in said, result.stdout + result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "HDF5-DIAG" not in result.stderr, result.stderr[-2000:]
