"""The published ELMo models by name, downloaded into a per-user cache:
AllenNLP's four English models and ELMoForManyLangs' 44 languages.

    resolve_model("allennlp-elmo-small")  # (options.json, weights.hdf5) in the cache
    resolve_model("elmo-en-small")        # (its folder in the package, None): shipped, no download
    resolve_model("path/to/model")        # (Path("path/to/model"), None): a path as given
    model_folder("elmo-en-small")         # the folder of a model's files, for what reads more of them
    fetch_model("allennlp-elmo-small")    # the cached files, downloaded when missing

`CATALOGUE` lists each model's files with its size, language, licence and
source: AllenNLP's options.json and weights.hdf5 (`PublishedModel`), or one
zip that unpacks to an ELMoForManyLangs model's folder (`PublishedArchive`).
The cache holds a folder per model, named after it: the files under their
published names, `sha256.json`, the record of each file's size and SHA-256,
and for an archive the folder it unpacked to (`UNPACKED`), stamped with the
archive's SHA-256 so that a changed archive is unpacked again.

Checksums: AllenNLP publishes none for these files. Each file's SHA-256 is
recorded when it is first downloaded (or first used, when it was put in the
folder by hand) and checked at every later load: a file that has changed since
is refused (E705) and left as it is. A catalogue entry may carry a file's size
and SHA-256; a download is then checked against them before it is kept (E704).

Downloads go through pooch: each file streams into a temporary file in the
model's folder, is checked, and is moved into place whole. A transfer that is
cut, stalls or is not the listed file starts again, up to `retries` times, and
then ends in E703 or E704 with nothing of the model kept (the other file too,
if this call downloaded it). The record is written last, so a model counts as
cached only once both files are whole. Processes fetching the same model take
turns under a file lock: one downloads, the others find its files.

Environment:
    SPACY_ELMO_CACHE    the cache folder; by default the per-user cache folder
                        (platformdirs' user_cache_dir, ~/.cache/spacy-elmo on Linux)
    SPACY_ELMO_OFFLINE  1, true, yes or on: never download. Cached models load;
                        a missing one is E702, which names the files, their
                        URLs and the folder to put them in by hand.
"""

import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import pooch
import requests
from filelock import FileLock, Timeout
from urllib3.exceptions import ReadTimeoutError

from .disk import writing
from .errors import ConfigError, DamagedFileError, DownloadError, InputError
from .shipped_models import SHIPPED_MODELS, is_shipped, shipped_model
from .util import atomic_path, file_digest

CACHE_ENV = "SPACY_ELMO_CACHE"
OFFLINE_ENV = "SPACY_ELMO_OFFLINE"
CACHE_NAME = "spacy-elmo"  # the folder's name in the per-user cache folder
RECORD = "sha256.json"
LOCK = ".lock"
UNPACKED = "model"  # an archive's folder in its model's folder
# The files that make a folder an ELMoForManyLangs model's (`bilm.efml.is_efml_folder` checks the same).
EFML_MARKS = ("config.json", "encoder.pkl")
UNPACKED_STAMP = ".archive-sha256"  # in UNPACKED: the SHA-256 of the archive it came from
MAX_UNPACKED_BYTES = 16 * 2**30  # what an archive may unpack to; a published one is well under 1 GiB
DEFAULT_TIMEOUT = 30.0  # seconds to connect, and between two reads of the body
DEFAULT_RETRIES = 2  # pooch waits 1 s, then 2 s, before starting again
_OFF = frozenset({"1", "true", "yes", "on"})
_ON = frozenset({"", "0", "false", "no", "off"})
# What a file of the model is checked for: file_digest's keys, ModelFile's fields.
_CHECKED = {"size": "size in bytes", "sha256": "SHA-256"}
_LISTED = "the file the catalogue lists"
# pooch streams into a file of tempfile.NamedTemporaryFile(dir=folder): "tmp" and 8 characters.
_POOCH_TEMPORARY = re.compile(r"tmp[a-z0-9_]{8}")
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] [^'\")]+")


@dataclass(frozen=True)
class ModelFile:
    """A published file: its URL and, when known, its exact size in bytes and
    its SHA-256, which a download must then match."""

    url: str
    size: Optional[int] = None
    sha256: Optional[str] = None

    @property
    def name(self) -> str:
        """The file's name, in the cache as on the server: the last part of its URL."""
        return self.url.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PublishedModel:
    """A published biLM: its two files, and what the `models` command shows of it."""

    name: str
    options: ModelFile
    weights: ModelFile
    parameters: int  # the biLM's weights, as BiLMOptions.n_parameters counts them
    language: str
    licence: str
    source: str  # the page that publishes the model
    trained_on: str

    @property
    def files(self) -> Tuple[ModelFile, ModelFile]:
        return self.options, self.weights

    @property
    def size_mb(self) -> float:
        """The download in MB (10^6 bytes): the weights in float32, 4 bytes each
        (the options file is under 1 kB)."""
        return self.parameters * 4 / 1e6


@dataclass(frozen=True)
class PublishedArchive:
    """A published biLM as one zip that unpacks to its model's folder (an
    ELMoForManyLangs model: config.json, char.dic, word.dic and its two
    pickles, read by `spacy_elmo.bilm.efml`)."""

    name: str
    archive: ModelFile
    parameters: int  # the weights apart from the word and character tables, whose sizes vary by language
    language: str
    licence: str
    source: str
    trained_on: str

    @property
    def files(self) -> Tuple[ModelFile]:
        return (self.archive,)

    @property
    def size_mb(self) -> float:
        """The least the weights take in MB (10^6 bytes) in float32: the tables come on top."""
        return self.parameters * 4 / 1e6


Published = Union[PublishedModel, PublishedArchive]


class CachedModel(NamedTuple):
    """A cached model's files: AllenNLP's two, or for an archive the folder it
    unpacked to and None (as `resolve_model` gives a folder)."""

    options: Path
    weights: Optional[Path]


# AllenNLP's URLs as its last release spells them (allennlp 2.10,
# allennlp/modules/token_embedders/elmo_token_embedder.py, the default
# options_file and weight_file); the older
# https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/... addresses of
# allennlp.org/elmo name the same bucket and keys. Each model's folder and file
# names are those of allennlp.org/elmo's table and of AllenNLP's own code.
ALLENNLP_ELMO = "https://allennlp.s3.amazonaws.com/models/elmo"
ALLENNLP_PAGE = "https://allennlp.org/elmo"
# The code that publishes these files is Apache-2.0 (allenai/allennlp's
# LICENSE; allenai/bilm-tf's setup.py, license='Apache License 2.0'), and
# allennlp.org/elmo names no other licence for the weights.
APACHE_2 = "Apache-2.0"
# allennlp.org/elmo: "All models except for the 5.5B model were trained on the
# 1 Billion Word Benchmark, approximately 800M tokens of news crawl data from
# WMT 2011"; the 5.5B model on Wikipedia (1.9B) and WMT 2008-2012 news crawl (3.6B).
ONE_BILLION_WORDS = "1B Word Benchmark (WMT 2011 news, 800M tokens)"
WIKIPEDIA_AND_NEWS = "Wikipedia (1.9B tokens) and WMT 2008-2012 news (3.6B)"


def _allennlp(name: str, folder: str, parameters: int, trained_on: str) -> PublishedModel:
    stem = f"{ALLENNLP_ELMO}/{folder}/elmo_{folder}"
    return PublishedModel(
        name=name,
        options=ModelFile(f"{stem}_options.json"),
        weights=ModelFile(f"{stem}_weights.hdf5"),
        parameters=parameters,
        language="en",
        licence=APACHE_2,
        source=ALLENNLP_PAGE,
        trained_on=trained_on,
    )


# ELMoForManyLangs (HIT-SCIR): the language and NLPL repository id of each
# model, as the README of its last release (elmoformanylangs 0.0.4.post2) lists
# them, the zips http://vectors.nlpl.eu/repository/11/<id>.zip. Each model was
# trained on about 20 million words of the CoNLL 2018 shared task's raw text
# (Wikipedia and Common Crawl) of its language; Chinese is traditional Chinese.
# Every model has the architecture ELMoForManyLangs ships (`efml.SHIPPED_ARCHITECTURE`):
# the original biLM's CNN (50-d characters), highways and LSTMs, and 100-d word
# vectors beside the CNN's features; `EFML_PARAMETERS` counts those weights
# apart from the two tables (BiLMOptions of that architecture without tables).
# Neither ELMoForManyLangs nor the repository's listing states a licence for the
# weights (the code is MIT); no size in bytes nor checksum is published.
NLPL_REPOSITORY = "http://vectors.nlpl.eu/repository/11"
EFML_PAGE = "https://github.com/HIT-SCIR/ELMoForManyLangs"
EFML_LICENCE = "unstated"
EFML_TRAINED_ON = "CoNLL 2018 shared task raw text (Wikipedia, Common Crawl), 20M words"
EFML_PARAMETERS = 94_066_752
EFML_LANGUAGES = {
    "ar": 136,
    "bg": 137,
    "ca": 138,
    "cs": 139,
    "cu": 140,
    "da": 141,
    "de": 142,
    "el": 143,
    "en": 144,
    "es": 145,
    "et": 146,
    "eu": 147,
    "fa": 148,
    "fi": 149,
    "fr": 150,
    "ga": 151,
    "gl": 152,
    "grc": 153,
    "he": 154,
    "hi": 155,
    "hr": 156,
    "hu": 157,
    "id": 158,
    "it": 159,
    "ja": 160,
    "ko": 161,
    "la": 162,
    "lv": 163,
    "nl": 164,
    "nb": 165,
    "nn": 166,
    "pl": 167,
    "pt": 168,
    "ro": 169,
    "ru": 170,
    "sk": 171,
    "sl": 172,
    "sv": 173,
    "tr": 174,
    "ug": 175,
    "uk": 176,
    "ur": 177,
    "vi": 178,
    "zh": 179,
}


def _efml(language: str, repository_id: int) -> PublishedArchive:
    return PublishedArchive(
        name=f"efml-{language}",
        archive=ModelFile(f"{NLPL_REPOSITORY}/{repository_id}.zip"),
        parameters=EFML_PARAMETERS,
        language=language,
        licence=EFML_LICENCE,
        source=EFML_PAGE,
        trained_on=EFML_TRAINED_ON,
    )


# Parameters: BiLMOptions(...).n_parameters of each model's options (LSTM
# 1024/128, 2048/256, 4096/512; 1, 1, 2 highway layers; the same 2048 CNN
# filters), which round to allennlp.org/elmo's 13.6, 28.0 and 93.6 million; at
# 4 bytes each the original's weights are 374 MB, the size a mirror of its
# weights.hdf5 lists (huggingface.co/lysandre/elmo-2x4096_512_2048cnn_2xhighway).
# No size in bytes nor checksum is published: the record keeps the first download's.
CATALOGUE: Mapping[str, Published] = MappingProxyType(
    {
        model.name: model
        for model in (
            _allennlp("allennlp-elmo-small", "2x1024_128_2048cnn_1xhighway", 13_593_312, ONE_BILLION_WORDS),
            _allennlp("allennlp-elmo-medium", "2x2048_256_2048cnn_1xhighway", 28_027_744, ONE_BILLION_WORDS),
            _allennlp("allennlp-elmo-original", "2x4096_512_2048cnn_2xhighway", 93_600_864, ONE_BILLION_WORDS),
            _allennlp(
                "allennlp-elmo-original-5.5b", "2x4096_512_2048cnn_2xhighway_5.5B", 93_600_864, WIKIPEDIA_AND_NEWS
            ),
            *(_efml(language, repository_id) for language, repository_id in EFML_LANGUAGES.items()),
        )
    }
)


def resolve_model(
    name_or_path: Union[str, Path], *, catalogue: Optional[Mapping[str, Published]] = None, **fetch_options
) -> Tuple[Path, Optional[Path]]:
    """The options and weights files a name or a path stands for, to hand to
    ``BiLM.from_allennlp(*resolve_model(x))``.

    A str that names a shipped model (`spacy_elmo.shipped_models`): its
    folder in the installed package, its files checked against its SHA256SUMS
    (E710), with no download. A str that names a published model: its two
    cached files, downloaded when missing (`fetch_model`, which takes
    `fetch_options`). A Path, or a str naming an existing file or folder:
    ``(path, None)``, left as it is for the loader (a folder with both files,
    or an options.json whose weights file the caller passes). Anything else
    is E709.
    """
    table = CATALOGUE if catalogue is None else catalogue
    if is_shipped(name_or_path):
        return shipped_model(name_or_path), None
    if isinstance(name_or_path, str) and name_or_path in table:
        return tuple(fetch_model(name_or_path, catalogue=table, **fetch_options))
    if isinstance(name_or_path, Path) or Path(name_or_path).exists():
        return Path(name_or_path), None
    raise InputError("E709", found=name_or_path, names=", ".join((*SHIPPED_MODELS, *table)))


def is_model_name(name_or_path: Union[str, Path], *, catalogue: Optional[Mapping[str, Published]] = None) -> bool:
    """Whether `name_or_path` is a model's name, shipped or published (a str, never a Path)."""
    table = CATALOGUE if catalogue is None else catalogue
    return is_shipped(name_or_path) or (isinstance(name_or_path, str) and name_or_path in table)


def model_folder(name_or_path: Union[str, Path], **fetch_options) -> Path:
    """The folder of a model's files, for what reads more of a model than
    its options and weights (`perplexity` and ``pretrain --init-from`` read
    its vocab.txt and softmax.hdf5 too): for a name, the folder `resolve_model`
    finds its files in (the shipped model's checked folder; a published model's
    folder in the cache, fetched when missing); a path as it is."""
    if not is_model_name(name_or_path, catalogue=fetch_options.get("catalogue")):
        return Path(name_or_path)
    options, weights = resolve_model(name_or_path, **fetch_options)
    return options if weights is None else options.parent


def fetch_model(
    name: str,
    *,
    catalogue: Optional[Mapping[str, Published]] = None,
    cache: Optional[Union[str, Path]] = None,
    offline: Optional[bool] = None,
    progress: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
) -> CachedModel:
    """The cached files of the published model `name`, each checked against
    the SHA-256 recorded at its first download (E705 when it has changed);
    files that are missing are downloaded first and their SHA-256 recorded.

    cache: the cache folder (default `cache_dir()`).
    offline: True never downloads (E702 when a file is missing), False
        downloads whatever SPACY_ELMO_OFFLINE says, None leaves it to that.
    progress: draw a progress bar for each download, on stderr.
    timeout: seconds to wait for the server, to connect and between two reads.
    retries: how many times a failed download starts again.
    """
    model = _lookup(name, catalogue)
    folder = model_dir(model.name, cache)
    if _is_complete(model, folder):
        digests = _check_files(model, folder, model.files, _read_record(model, folder))
        if not isinstance(model, PublishedArchive) or _is_unpacked(folder, digests):
            return _cached(model, folder)
    switch = "offline=True" if offline else _offline_switch() if offline is None else None
    if switch and not all((folder / file.name).is_file() for file in model.files):
        raise _not_cached(model, folder, switch)
    _make_folder(folder)
    with _taking_turns(folder, model.name, progress):
        record = _read_record(model, folder)
        present = [file for file in model.files if (folder / file.name).is_file()]
        digests = _check_files(model, folder, present, record)
        missing = [file for file in model.files if file.name not in digests]
        if switch and missing:
            raise _not_cached(model, folder, switch)
        digests.update(_download(model, folder, missing, progress=progress, timeout=timeout, retries=retries))
        if digests != record:
            _write_record(model, folder, digests)
        if isinstance(model, PublishedArchive) and not _is_unpacked(folder, digests):
            _unpack(model, folder, digests[model.archive.name]["sha256"])
    return _cached(model, folder)


def _cached(model: Published, folder: Path) -> CachedModel:
    if isinstance(model, PublishedArchive):
        return CachedModel(_model_root(model, folder / UNPACKED, folder), None)
    return CachedModel(folder / model.options.name, folder / model.weights.name)


def _is_unpacked(folder: Path, digests: Dict[str, Dict[str, object]]) -> bool:
    """Whether the archive in `folder` (of the SHA-256 in `digests`) was unpacked whole."""
    stamp = folder / UNPACKED / UNPACKED_STAMP
    return stamp.is_file() and stamp.read_text(encoding="utf8") in {str(d["sha256"]) for d in digests.values()}


def _unpack(model: PublishedArchive, folder: Path, sha256: str) -> None:
    """Unpack the model's archive into `folder`/UNPACKED, whole or not at all
    (the caller holds the lock): into a temporary folder first, stamped with
    the archive's SHA-256, then moved into place over any older copy. Members
    that would land outside the folder, links, and more than
    MAX_UNPACKED_BYTES in all are refused (E711)."""
    path = folder / model.archive.name
    scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=folder))
    try:
        with writing(folder / UNPACKED):
            try:
                with zipfile.ZipFile(path) as archive:
                    archive.extractall(scratch, members=_safe_members(archive))
            except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, ValueError) as err:
                raise DamagedFileError("E711", path=path, name=model.name, problem=err, folder=folder) from err
            (scratch / UNPACKED_STAMP).write_text(sha256, encoding="utf8")
            _model_root(model, scratch, folder)
            shutil.rmtree(folder / UNPACKED, ignore_errors=True)
            os.replace(scratch, folder / UNPACKED)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _safe_members(archive: zipfile.ZipFile) -> List[zipfile.ZipInfo]:
    """The archive's members, each checked to land inside the folder it is
    unpacked into and to be a file or folder (ValueError otherwise)."""
    members = archive.infolist()
    for member in members:
        parts = Path(member.filename.replace("\\", "/")).parts
        if member.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
            raise ValueError(f"its member '{member.filename}' would land outside the model's folder")
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ValueError(f"its member '{member.filename}' is a link")
    total = sum(member.file_size for member in members)
    if total > MAX_UNPACKED_BYTES:
        raise ValueError(f"it unpacks to {total:,} bytes, more than the {MAX_UNPACKED_BYTES:,} allowed")
    return members


def _model_root(model: PublishedArchive, unpacked: Path, folder: Path) -> Path:
    """The model's folder in what its archive unpacked to: that folder, or the
    one folder inside it holding an ELMoForManyLangs model (E711 otherwise)."""
    candidates = [unpacked, *sorted(path for path in unpacked.iterdir() if path.is_dir())]
    found = [path for path in candidates if all((path / name).is_file() for name in EFML_MARKS)]
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise DamagedFileError(
            "E711",
            path=folder / model.archive.name,
            name=model.name,
            folder=folder,
            problem=f"it holds {what} ELMoForManyLangs model folder (config.json and encoder.pkl)"
            " at its top or one folder down, expected one",
        )
    return found[0]


def cache_dir() -> Path:
    """The cache folder: SPACY_ELMO_CACHE when set, else the per-user cache folder."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    return Path(configured).expanduser() if configured else pooch.os_cache(CACHE_NAME)


def model_dir(name: str, cache: Optional[Union[str, Path]] = None) -> Path:
    """The folder of the model `name` in the cache (default `cache_dir()`)."""
    return (cache_dir() if cache is None else Path(cache)) / name


def is_cached(
    name: str, *, catalogue: Optional[Mapping[str, Published]] = None, cache: Optional[Union[str, Path]] = None
) -> bool:
    """Whether the model's files and their record are in the cache (their
    checksums are checked, and an archive unpacked, when the model loads)."""
    model = _lookup(name, catalogue)
    return _is_complete(model, model_dir(model.name, cache))


def _offline_switch() -> Optional[str]:
    """ "SPACY_ELMO_OFFLINE=<value>" when that turns downloads off, else None
    (E707 for a value it does not know)."""
    value = os.environ.get(OFFLINE_ENV, "")
    word = value.strip().lower()
    if word in _OFF:
        return f"{OFFLINE_ENV}={value}"
    if word in _ON:
        return None
    raise ConfigError("E707", variable=OFFLINE_ENV, found=value)


def _lookup(name: str, catalogue: Optional[Mapping[str, Published]]) -> Published:
    table = CATALOGUE if catalogue is None else catalogue
    if name not in table:
        raise InputError("E701", found=name, names=", ".join(table))
    return table[name]


def _is_complete(model: Published, folder: Path) -> bool:
    return all((folder / name).is_file() for name in (RECORD, *(file.name for file in model.files)))


def _not_cached(model: Published, folder: Path, switch: str) -> DownloadError:
    files, urls = _listing(model)
    return DownloadError("E702", name=model.name, switch=switch, files=files, folder=folder, urls=urls)


def _listing(model: Published) -> Tuple[str, str]:
    """The model's file names and URLs, as the errors list them."""
    return " and ".join(f"'{file.name}'" for file in model.files), ", ".join(file.url for file in model.files)


def _read_record(model: Published, folder: Path) -> Dict[str, Dict[str, object]]:
    """{file name: {"size", "sha256"}} as recorded at the first download; {} before it."""
    path = folder / RECORD
    if not path.exists():
        return {}
    try:
        files = json.loads(path.read_text(encoding="utf8"))["files"]
        return {name: {"size": int(seen["size"]), "sha256": str(seen["sha256"])} for name, seen in files.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise DamagedFileError("E706", path=path, name=model.name, reason=err, folder=folder) from err


def _write_record(model: Published, folder: Path, digests: Dict[str, Dict[str, object]]) -> None:
    path = folder / RECORD
    files = {file.name: {"url": file.url, **digests[file.name]} for file in model.files}
    with writing(path), atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"model": model.name, "files": files}, indent=2) + "\n", encoding="utf8")


def _check_files(
    model: Published, folder: Path, files: Sequence[ModelFile], record: Dict[str, Dict[str, object]]
) -> Dict[str, Dict[str, object]]:
    """Each file's size and SHA-256, checked against the catalogue's and the
    record's (E705). RETURNS: {file name: {"size", "sha256"}}."""
    recorded = f"the file first downloaded or placed there (its SHA-256 is recorded in '{folder / RECORD}')"
    digests = {}
    for file in files:
        path = folder / file.name
        digest = file_digest(path)
        for which, expected in ((_LISTED, vars(file)), (recorded, record.get(file.name, {}))):
            what, found, wanted = _difference(digest, expected)
            if what:
                raise DamagedFileError(
                    "E705",
                    path=path,
                    name=model.name,
                    which=which,
                    what=what,
                    found=found,
                    expected=wanted,
                    folder=folder,
                )
        digests[file.name] = digest
    return digests


def _difference(digest: Dict[str, object], expected: Mapping[str, object]) -> Tuple[str, object, object]:
    """The first of size and SHA-256 that `expected` gives and `digest` differs
    in: (what, found, expected); ("", None, None) when none does."""
    for key, what in _CHECKED.items():
        if expected.get(key) is not None and digest[key] != expected[key]:
            return what, digest[key], expected[key]
    return "", None, None


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _unusable_cache(folder, err) from err


def _unusable_cache(folder: Path, err: OSError) -> ConfigError:
    blocker = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    reason = f"'{blocker}' is a file, not a folder" if blocker else err.strerror or err
    return ConfigError(
        "E708", path=folder.parent, reason=reason, variable=CACHE_ENV, default=pooch.os_cache(CACHE_NAME)
    )


@contextmanager
def _taking_turns(folder: Path, name: str, progress: bool) -> Iterator[None]:
    """Hold the model's file lock: one process at a time downloads the model."""
    lock = FileLock(str(folder / LOCK))
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if progress:
                print(f"Waiting for another process to finish downloading '{name}'", file=sys.stderr)
            lock.acquire()
    except OSError as err:
        raise _unusable_cache(folder, err) from err
    try:
        yield
    finally:
        lock.release()


def _download(
    model: Published, folder: Path, files: List[ModelFile], *, progress: bool, timeout: float, retries: int
) -> Dict[str, Dict[str, object]]:
    """Download `files` into `folder` (the caller holds the lock). RETURNS:
    {file name: {"size", "sha256"}}. On a failure, nothing this call
    downloaded is kept."""
    if not files:
        return {}
    _remove_temporaries(folder)
    fetcher = pooch.create(
        path=folder,
        base_url="",
        registry={file.name: None for file in files},
        urls={file.name: file.url for file in files},
        retry_if_failed=retries,
    )
    digests: Dict[str, Dict[str, object]] = {}
    try:
        for file in files:
            check = _CheckedDownload(file, pooch.HTTPDownloader(progressbar=progress, timeout=timeout))
            try:
                with writing(folder / file.name):
                    fetcher.fetch(file.name, downloader=check)
            except _NotTheFile as err:
                raise DownloadError(
                    "E704",
                    url=file.url,
                    name=model.name,
                    what=err.what,
                    found=err.found,
                    expected=err.expected,
                    folder=folder,
                ) from err
            except requests.RequestException as err:
                names, urls = _listing(model)
                raise DownloadError(
                    "E703",
                    url=file.url,
                    name=model.name,
                    reason=_why(err, timeout),
                    files=names,
                    urls=urls,
                    folder=folder,
                ) from err
            digests[file.name] = check.digest
    except BaseException:
        for name in digests:
            (folder / name).unlink(missing_ok=True)
        raise
    return digests


class _NotTheFile(ValueError):
    """A download that differs from the catalogue's size or SHA-256 (pooch
    discards a download that raises a ValueError, and starts again)."""

    def __init__(self, what: str, found: object, expected: object):
        super().__init__(f"its {what} is {found}, expected {expected}")
        self.what, self.found, self.expected = what, found, expected


class _CheckedDownload:
    """pooch's downloader, then a check of what came against the catalogue's
    size and SHA-256, before pooch moves it into place. `digest` is what came."""

    def __init__(self, file: ModelFile, download: pooch.HTTPDownloader):
        self.file = file
        self.download = download
        self.digest: Dict[str, object] = {}

    def __call__(self, url: str, output_file: str, fetcher: Optional[pooch.Pooch]) -> None:
        self.download(url, output_file, fetcher)
        digest = file_digest(output_file)
        what, found, expected = _difference(digest, vars(self.file))
        if what:
            raise _NotTheFile(what, found, expected)
        self.digest = digest


def _remove_temporaries(folder: Path) -> None:
    """Remove what a download killed outright (kill -9, a power cut) left in the
    model's folder: pooch's temporary files (the caller holds the lock, so
    none is in use)."""
    for path in folder.iterdir():
        if _POOCH_TEMPORARY.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)


def _why(err: requests.RequestException, timeout: float) -> str:
    """What went wrong with a download, in words."""
    if isinstance(err, requests.HTTPError) and err.response is not None:
        return f"the server answered {err.response.status_code} {err.response.reason}"
    # A stall in the body comes as a ConnectionError wrapping urllib3's ReadTimeoutError.
    if isinstance(err, requests.Timeout) or (err.args and isinstance(err.args[0], ReadTimeoutError)):
        return f"the server sent nothing for {timeout:g} s (the timeout)"
    if isinstance(err, requests.exceptions.ChunkedEncodingError):
        return "the connection closed before the whole file came"
    if isinstance(err, requests.ConnectionError):
        detail = _ERRNO_TEXT.search(str(err))
        return f"no connection to the server ({detail.group(0).strip() if detail else type(err).__name__})"
    return str(err)
