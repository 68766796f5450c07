"""A tokenised corpus kept on disk: token ids, sentence offsets and word strings.

The folder holds

    tokens.u32    every token as the id of its word (uint32, memory-mapped)
    offsets.i64   where each sentence starts in tokens, plus the end (int64)
    words.jsonl   word id -> its string, one JSON string a line
    counts.i64    word id -> how often it occurs
    meta.json     its format (name and version: what marks the folder as a
                  prepared corpus of ours), sizes, what reading skipped, the
                  fingerprint of the sources, and the size and SHA-256 of each
                  file above

It is written in one pass over the text (streamed: the corpus need not fit in
memory, only its distinct words do) into a temporary folder swapped into place
at the end (`spacy_elmo.util.swap_directory`), and reused as long as the source files and the tokenizer are the
same (the fingerprint: paths, sizes, modification times, tokenizer) and its own
files are those it wrote (their sizes and SHA-256, checked at every reuse: a
damaged corpus is prepared again, never trained on). Only a folder that is
empty or holds such a corpus is ever replaced.
"""
import json
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Union

import numpy

from ...errors import DamagedFileError, OutputError
from ...util import file_digest, swap_directory
from ...disk import RUN_FILE, writing
from .reader import MAX_LINE_BYTES, ReadStats, read_lines
from .tokenizers import Tokenizer, make_tokenizer

FORMAT_NAME = "spacy-elmo prepared corpus"
FORMAT_VERSION = 3  # 3: meta.json names its format; 2: it records the size and SHA-256 of the corpus's files
_UNNAMED_VERSION = 2  # the last format whose meta.json does not name it
META_NAME = "meta.json"
CORPUS_FILES = ("tokens.u32", "offsets.i64", "words.jsonl", "counts.i64")
_FLUSH_TOKENS = 1 << 20


@dataclass
class PreparedCorpus:
    directory: Optional[Path]  # None: held in memory only (`from_sentences`)
    tokens: numpy.ndarray  # (n_tokens,) uint32 word ids
    offsets: numpy.ndarray  # (n_sentences + 1,) int64
    words: List[str]
    counts: numpy.ndarray  # (n_words,) int64
    meta: dict

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def n_sentences(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def lengths(self) -> numpy.ndarray:
        return numpy.diff(self.offsets)

    @classmethod
    def load(cls, directory: Union[str, Path]) -> "PreparedCorpus":
        """The corpus prepared in `directory`; E322 if its files are not
        those that were written there (cut, changed or missing)."""
        directory = Path(directory)
        meta = json.loads((directory / META_NAME).read_text(encoding="utf8"))
        damage = _damage(directory, meta)
        if damage is not None:
            raise DamagedFileError("E322", path=directory, reason=damage)
        if meta["n_tokens"]:
            tokens = numpy.memmap(directory / "tokens.u32", dtype=numpy.uint32, mode="r")
        else:
            tokens = numpy.zeros(0, dtype=numpy.uint32)
        offsets = numpy.fromfile(directory / "offsets.i64", dtype=numpy.int64)
        counts = numpy.fromfile(directory / "counts.i64", dtype=numpy.int64)
        with (directory / "words.jsonl").open(encoding="utf8") as f:
            words = [json.loads(line) for line in f]
        return cls(directory, tokens, offsets, words, counts, meta)

    @classmethod
    def from_sentences(cls, sentences: Iterable[List[str]]) -> "PreparedCorpus":
        """`sentences` held in memory, their words numbered as on disk: in
        order of first appearance."""
        index: Dict[str, int] = {}
        ids: List[int] = []
        offsets = [0]
        for sentence in sentences:
            ids.extend(index.setdefault(word, len(index)) for word in sentence)
            offsets.append(len(ids))
        tokens = numpy.asarray(ids, dtype=numpy.uint32)
        counts = numpy.bincount(tokens, minlength=len(index)).astype(numpy.int64)
        meta = {"n_tokens": len(ids), "n_sentences": len(offsets) - 1, "n_words": len(index)}
        return cls(None, tokens, numpy.asarray(offsets, dtype=numpy.int64), list(index), counts, meta)


def _damage(directory: Path, meta: Dict) -> Optional[str]:
    """What is wrong with the files of the corpus in `directory`, or None
    when each has the size and SHA-256 recorded in its meta.json."""
    recorded = meta.get("files")
    if not isinstance(recorded, dict) or set(recorded) != set(CORPUS_FILES):
        return "its meta.json records no size and SHA-256 for its files"
    for name in CORPUS_FILES:
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        size = path.stat().st_size
        if size != recorded[name].get("size"):
            return f"{name} has {size:,} bytes, expected {recorded[name].get('size'):,}"
    for name in CORPUS_FILES:
        if file_digest(directory / name)["sha256"] != recorded[name].get("sha256"):
            return f"{name} is not the file that was written (its SHA-256 differs)"
    return None


def fingerprint(files: Iterable[Union[str, Path]], tokenizer: str) -> Dict:
    """What a prepared corpus depends on: the text `files` (as `find_files` lists them) and the tokenizer."""
    files = [Path(p) for p in files]
    return {
        "version": FORMAT_VERSION,
        "tokenizer": tokenizer,
        "max_line_bytes": MAX_LINE_BYTES,
        "files": [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files],
    }


def is_prepared(directory: Union[str, Path], expected: Dict) -> bool:
    """Whether `directory` holds a corpus prepared from the sources `expected` fingerprints."""
    meta = _read_meta(Path(directory))
    return meta is not None and meta.get("fingerprint") == expected


def _replaceable(directory: Path) -> bool:
    """Whether `directory` is an empty folder or holds a corpus prepared by
    this package (of any version): the only folders preparing replaces."""
    return directory.is_dir() and (not any(directory.iterdir()) or _read_meta(directory) is not None)


def _read_meta(directory: Path) -> Optional[Dict]:
    """The corpus's meta.json, or None where there is none that is ours (`_is_ours`)."""
    try:
        meta = json.loads((directory / META_NAME).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    return meta if _is_ours(meta) else None


def _is_ours(meta: object) -> bool:
    """Whether `meta` is the meta.json of a corpus this package prepared: one
    that names `FORMAT_NAME` as its format, or one of format 2, which named
    none but records exactly our fingerprint and the digests of our files."""
    if not isinstance(meta, dict):
        return False
    if isinstance(meta.get("format"), dict):
        return meta["format"].get("name") == FORMAT_NAME
    fingerprinted, files = meta.get("fingerprint"), meta.get("files")
    return (
        isinstance(fingerprinted, dict) and fingerprinted.get("version") == _UNNAMED_VERSION
        and set(fingerprinted) == set(fingerprint([], ""))
        and isinstance(files, dict) and set(files) == set(CORPUS_FILES)
    )


def prepare_corpus(
    files: List[Union[str, Path]],
    tokenizer: str,
    directory: Union[str, Path],
    *,
    tokenize: Optional[Tokenizer] = None,
    progress: bool = True,
    log=print,
) -> PreparedCorpus:
    """Tokenise the text `files` into `directory`, or reuse what is there.

    files: the text files, as `find_files` lists them (a run lists them once).
    tokenizer: its name, as the config gives it (the prepared corpus records it).
    tokenize: the tokenizer itself; by default `make_tokenizer(tokenizer)`.
    A corpus there whose files were damaged since (cut, changed) is prepared again.
    """
    directory = Path(directory)
    files = [Path(p) for p in files]
    expected = fingerprint(files, tokenizer)
    if is_prepared(directory, expected):
        damage = _damage(directory, _read_meta(directory) or {})
        if damage is None:
            corpus = PreparedCorpus.load(directory)
            log(f"Reusing the prepared corpus in {directory} ({corpus.n_tokens:,} tokens)")
            return corpus
        log(f"The prepared corpus in {directory} is damaged ({damage}): preparing it again")
    if directory.exists() and not _replaceable(directory):
        raise OutputError("E302", path=directory, format=FORMAT_NAME)
    tokenize = tokenize if tokenize is not None else make_tokenizer(tokenizer)
    # No room: E525, and the temporary folder goes.
    with writing(directory, code=RUN_FILE), swap_directory(directory) as tmp:
        stats = _write(files, tokenize, tmp, expected, progress)
    corpus = PreparedCorpus.load(directory)
    log(
        f"Prepared {corpus.n_tokens:,} tokens in {corpus.n_sentences:,} sentences "
        f"({len(corpus.words):,} distinct words) from {stats.files} files into {directory}"
    )
    if stats.skipped_lines:
        log(
            f"Skipped {stats.skipped_lines:,} lines ({stats.skipped_bytes:,} bytes) that were "
            "not UTF-8 text or held binary data"
        )
    return corpus


def _write(files: List[Path], tokenizer, directory: Path, expected: Dict, progress: bool) -> ReadStats:
    from tqdm import tqdm

    stats = ReadStats()
    word_ids: Dict[str, int] = {}
    words: List[str] = []
    counts = array("q")
    offsets = array("q", [0])
    buffer = array("I")
    n_tokens = 0
    total = sum(p.stat().st_size for p in files)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="Preparing", disable=not progress, mininterval=1.0)
    with (directory / "tokens.u32").open("wb") as tokens_out, (directory / "words.jsonl").open(
        "w", encoding="utf8"
    ) as words_out:
        for sentence in tokenizer(read_lines(files, stats)):
            for word in sentence:
                index = word_ids.get(word)
                if index is None:
                    index = word_ids[word] = len(words)
                    words.append(word)
                    counts.append(0)
                    words_out.write(json.dumps(word, ensure_ascii=False) + "\n")
                counts[index] += 1
                buffer.append(index)
            n_tokens += len(sentence)
            offsets.append(n_tokens)
            if len(buffer) >= _FLUSH_TOKENS:
                buffer.tofile(tokens_out)
                buffer = array("I")
            if len(offsets) % 1000 == 0:
                bar.update(stats.bytes_read - bar.n)
        buffer.tofile(tokens_out)
    bar.update(stats.bytes_read - bar.n)
    bar.close()
    with (directory / "offsets.i64").open("wb") as f:
        offsets.tofile(f)
    with (directory / "counts.i64").open("wb") as f:
        counts.tofile(f)
    meta = {
        "format": {"name": FORMAT_NAME, "version": FORMAT_VERSION},
        "fingerprint": expected,
        "files": {name: file_digest(directory / name) for name in CORPUS_FILES},
        "n_tokens": n_tokens,
        "n_sentences": len(offsets) - 1,
        "n_words": len(words),
        "read": stats.to_dict(),
    }
    (directory / META_NAME).write_text(json.dumps(meta, indent=2), encoding="utf8")
    return stats
