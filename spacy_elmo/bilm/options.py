"""The biLM architecture, as AllenNLP/bilm-tf ``options.json`` describes it.

An ``options.json`` is checked against a schema (`_OptionsFile`) before anything
is built from it: the types, sane bounds on every size (so that a typo cannot
ask for terabytes), finite clips, and the model's size as a whole. Keys that
the biLM does not use (bilm-tf's training settings) are ignored. The file
itself must be a regular file (a link to one is followed) of at most
`MAX_OPTIONS_BYTES`, so that a named pipe or a device is refused, not read.

Two optional sections describe ELMoForManyLangs' token encoder: a character
table looked up by code point (``char_cnn.char_table``, `CharTable`) in place
of UTF-8 bytes, and a word table whose vectors join the char CNN's features
(``word_table``, `WordTable`). In ``options.json`` each names a JSON file
beside it that lists the table's entries (`TABLE_FILES`); in the dict of
`BiLMOptions.to_allennlp` (a pipeline's bytes) the entries are inline.
"""

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from ..errors import DamagedFileError, InputError

# Bounds of the options. The largest published ELMo has 4096 LSTM cells, 2048
# filters and 50 characters per token, 93.6 million parameters.
MAX_DIM = 65536
MAX_CHARACTERS_PER_TOKEN = 1024
MAX_LAYERS = 64
MAX_FILTERS = 64
MAX_PARAMETERS = 2**30  # 4 GiB in float32
# An options.json is under 1 kB; a file a thousand times that size is not one.
MAX_OPTIONS_BYTES = 2**20
# A character table holds at most every code point and a few marks; a word table
# (ELMoForManyLangs' are under a million words) at most this many words, and its
# file at most this many bytes.
MAX_CHAR_TABLE = 0x110000 + 64
MAX_WORD_TABLE = 2**24
MAX_TABLE_BYTES = 2**28
# The number of character ids of bilm-tf's byte scheme: the bytes 0-255, the marks 256-260
# (char_ids.py, PAD_CHAR the last) and 261, "no token".
BYTE_CHAR_IDS = 262
OPTIONS_NAME = "options.json"
# The files `BiLMOptions.to_files` writes the tables' entries into, beside options.json.
TABLE_FILES = {"char_table": "chars.json", "word_table": "words.json"}


@dataclass(frozen=True)
class CharTable:
    """Characters looked up by Unicode code point in a table (ELMoForManyLangs'
    ``char.dic``), in place of UTF-8 bytes: character id k + 1 is
    ``entries[k]`` (id 0 stays "no token"), a single character or a mark.
    A token becomes ``[begin_word, its characters..., end_word, padding...]``,
    characters not in the table `unknown`; a sentence boundary
    ``[begin_word, begin_sentence or end_sentence, end_word, padding...]``;
    each field names the table entry of that mark."""

    entries: Tuple[str, ...]
    begin_word: str
    end_word: str
    begin_sentence: str
    end_sentence: str
    padding: str
    unknown: str

    MARKS = ("begin_word", "end_word", "begin_sentence", "end_sentence", "padding", "unknown")


@dataclass(frozen=True)
class WordTable:
    """Word vectors of `dim` looked up by the exact (cut) token in a table
    (ELMoForManyLangs' ``word.dic``), joined in front of the char CNN's
    features before the projection: word id k + 1 is ``entries[k]`` (id 0
    stays "no token"); words not in the table are `unknown` (an entry), the
    sentence boundaries the words `begin_sentence` and `end_sentence` (looked
    up as any word)."""

    entries: Tuple[str, ...]
    dim: int
    unknown: str
    begin_sentence: str
    end_sentence: str

    MARKS = ("unknown", "begin_sentence", "end_sentence")


@dataclass
class BiLMOptions:
    """Hyper-parameters of a character-based biLM (ELMo).

    The defaults are those of the original model
    (``elmo_2x4096_512_2048cnn_2xhighway``). A clip of 0 or None means no
    clipping.
    """

    char_embedding_dim: int = 16
    filters: List[Tuple[int, int]] = field(
        default_factory=lambda: [(1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)]
    )
    n_highway: int = 2
    n_characters: int = 262
    max_characters_per_token: int = 50
    activation: str = "relu"
    lstm_dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: Optional[float] = 3.0
    proj_clip: Optional[float] = 3.0
    use_skip_connections: bool = True
    char_table: Optional[CharTable] = None
    word_table: Optional[WordTable] = None

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @property
    def n_char_ids(self) -> int:
        """The character ids' range, "no token" (0) included: 262 for UTF-8
        bytes whatever `n_characters` says (261 in training files, 262 in
        inference files), one more than the character table's size otherwise."""
        return BYTE_CHAR_IDS if self.char_table is None else len(self.char_table.entries) + 1

    @property
    def word_dim(self) -> int:
        """The width of the word vectors in front of the char CNN's features (0: none)."""
        return 0 if self.word_table is None else self.word_table.dim

    @property
    def output_dim(self) -> int:
        """Width of every output layer: forward and backward concatenated."""
        return 2 * self.projection_dim

    @property
    def n_parameters(self) -> int:
        """How many weights the biLM these options describe holds."""
        F, p, c, e = self.n_filters, self.projection_dim, self.lstm_dim, self.char_embedding_dim
        cnn = self.n_characters * e + sum(width * e * n + n for width, n in self.filters)
        highway = self.n_highway * 2 * (F * F + F)
        words = 0 if self.word_table is None else len(self.word_table.entries) * self.word_dim
        projection = (F + self.word_dim) * p + p + words
        lstm = 2 * self.n_layers * (2 * p * 4 * c + 4 * c + c * p)
        return cnn + highway + projection + lstm

    def to_allennlp(self) -> Dict[str, Any]:
        """The options as the dict of an ``options.json``, the tables' entries inline."""
        data: Dict[str, Any] = {
            "char_cnn": {
                "embedding": {"dim": self.char_embedding_dim},
                "filters": [list(f) for f in self.filters],
                "n_highway": self.n_highway,
                "n_characters": self.n_characters,
                "max_characters_per_token": self.max_characters_per_token,
                "activation": self.activation,
            },
            "lstm": {
                "dim": self.lstm_dim,
                "projection_dim": self.projection_dim,
                "n_layers": self.n_layers,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "use_skip_connections": self.use_skip_connections,
            },
        }
        if self.char_table is not None:
            data["char_cnn"]["char_table"] = _table_dict(self.char_table)
        if self.word_table is not None:
            data["word_table"] = _table_dict(self.word_table)
        return data

    def to_files(self) -> Dict[str, str]:
        """The text of ``options.json`` and of each table's file (`TABLE_FILES`),
        by file name: options.json names the table files in place of their entries."""
        data = self.to_allennlp()
        files = {}
        for section, key in ((data["char_cnn"], "char_table"), (data, "word_table")):
            if key in section:
                files[TABLE_FILES[key]] = json.dumps(section[key].pop("entries"), ensure_ascii=False)
                section[key]["file"] = TABLE_FILES[key]
        return {OPTIONS_NAME: json.dumps(data, indent=2), **files}

    @classmethod
    def from_allennlp(cls, data: Dict[str, Any], path: Union[str, Path] = "<dict>") -> "BiLMOptions":
        """Read and validate the dict of an ``options.json``.

        Raises DamagedFileError: E002 for a missing key, E003 for a wrong value (the
        first found, by its dotted key), E007 for a model too large to build.
        """
        try:
            checked = _OptionsFile.model_validate(data)
        except ValidationError as err:
            raise _coded(err.errors()[0], path) from None
        cnn, lstm = checked.char_cnn, checked.lstm
        widest = max(width for width, _ in cnn.filters)
        if cnn.max_characters_per_token < widest:
            raise DamagedFileError(
                "E003",
                path=path,
                key="char_cnn.max_characters_per_token",
                expected=f"at least the widest filter ({widest})",
                found=cnn.max_characters_per_token,
            )
        char_table = None if cnn.char_table is None else _char_table(cnn.char_table, cnn.n_characters, path)
        if char_table is None and cnn.n_characters not in (261, 262):
            raise DamagedFileError(
                "E003",
                path=path,
                key="char_cnn.n_characters",
                found=cnn.n_characters,
                expected="261 or 262 (UTF-8 bytes), or the size of char_cnn.char_table",
            )
        word_table = None if checked.word_table is None else _word_table(checked.word_table, path)
        options = cls(
            char_embedding_dim=cnn.embedding.dim,
            filters=[(width, n) for width, n in cnn.filters],
            n_highway=cnn.n_highway,
            n_characters=cnn.n_characters,
            max_characters_per_token=cnn.max_characters_per_token,
            activation=cnn.activation,
            lstm_dim=lstm.dim,
            projection_dim=lstm.projection_dim,
            n_layers=lstm.n_layers,
            cell_clip=None if lstm.cell_clip is None else float(lstm.cell_clip),
            proj_clip=None if lstm.proj_clip is None else float(lstm.proj_clip),
            use_skip_connections=lstm.use_skip_connections,
            char_table=char_table,
            word_table=word_table,
        )
        if options.n_parameters > MAX_PARAMETERS:
            raise DamagedFileError(
                "E007",
                path=path,
                n_parameters=options.n_parameters,
                gib=options.n_parameters * 4 / 2**30,
                limit=MAX_PARAMETERS,
            )
        return options

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "BiLMOptions":
        """Read and validate an ``options.json``: E010 where `path` is no
        regular file, E011 where it is too large to be one, E001 where it is
        not JSON, then as `from_allennlp`."""
        path = Path(path)
        text = _read_small_file(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise DamagedFileError("E001", kind="options", path=path, reason=err) from err
        except RecursionError:  # arrays or objects nested thousands deep
            reason = "its JSON nests arrays or objects too deeply to be read (an options.json nests them 4 deep)"
            raise DamagedFileError("E001", kind="options", path=path, reason=reason) from None
        if isinstance(data, dict):
            _read_table_files(data, path)
        return cls.from_allennlp(data, path)


def _table_dict(table: Union[CharTable, WordTable]) -> Dict[str, Any]:
    """A table as its section of options.json, the entries inline."""
    data = {name: getattr(table, name) for name in table.MARKS}
    if isinstance(table, WordTable):
        data.update(n_words=len(table.entries), dim=table.dim)
    return {**data, "entries": list(table.entries)}


def _read_table_files(data: Dict[str, Any], path: Path) -> None:
    """Put into `data` (an options.json's dict) the entries of each table
    whose section names a file beside `path` instead of holding them (E903
    where the file is not a JSON list of strings)."""
    cnn = data.get("char_cnn")
    for section, key in ((cnn if isinstance(cnn, dict) else {}, "char_table"), (data, "word_table")):
        table = section.get(key)
        if not isinstance(table, dict) or "entries" in table or not isinstance(table.get("file"), str):
            continue
        name = table["file"]
        if Path(name).name != name:
            raise DamagedFileError(
                "E003",
                path=path,
                key=f"{key}.file",
                found=name,
                expected="the name of a file beside options.json",
            )
        table["entries"] = _read_table_file(path.parent / name, key)


def _read_table_file(path: Path, key: str) -> List[str]:
    """The entries of a table file: a regular file of at most
    `MAX_TABLE_BYTES` holding a JSON list of strings (E903 otherwise). It is
    opened without blocking, so that a named pipe is refused, not waited on."""
    kind = key.replace("_", " ")
    raw = b""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            if regular:
                with open(fd, "rb", closefd=False) as file:
                    raw = file.read(MAX_TABLE_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as err:
        raise DamagedFileError(
            "E903", kind=kind, path=path, problem=f"cannot be read ({err})", expected="the JSON file options.json names"
        ) from err
    problem = None if regular else "is not a regular file"
    if problem is None and len(raw) > MAX_TABLE_BYTES:
        problem = f"holds more than {MAX_TABLE_BYTES:,} bytes"
    entries = None
    if problem is None:
        try:
            entries = json.loads(raw.decode("utf8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            problem = f"is not JSON ({err})"
    if problem is None and not (isinstance(entries, list) and all(type(e) is str for e in entries)):
        problem = "is not a list of strings"
    if problem is not None:
        raise DamagedFileError(
            "E903",
            kind=kind,
            path=path,
            problem=problem,
            expected="a JSON list of the table's entries, entry k having id k",
        )
    return entries


def _checked_entries(entries: List[str], marks: Dict[str, str], key: str, path: Union[str, Path]) -> Tuple[str, ...]:
    """A table's entries, once found distinct and holding each mark (E003)."""
    distinct = set(entries)
    if len(distinct) != len(entries):
        seen: set = set()
        twice = next(e for e in entries if e in seen or seen.add(e))
        raise DamagedFileError(
            "E003",
            path=path,
            key=f"{key}.entries",
            found=twice,
            expected="distinct entries (this one is there more than once)",
        )
    missing = {name: mark for name, mark in marks.items() if mark not in distinct}
    if missing:
        name, mark = next(iter(missing.items()))
        raise DamagedFileError("E003", path=path, key=f"{key}.{name}", found=mark, expected="an entry of the table")
    return tuple(entries)


def _char_table(section: "_CharTableSection", n_characters: int, path: Union[str, Path]) -> CharTable:
    """The character table of a checked ``char_cnn.char_table`` section."""
    key = "char_cnn.char_table"
    if section.entries is None:
        raise DamagedFileError(
            "E003",
            path=path,
            key=f"{key}.entries",
            found=None,
            expected="the table's entries, inline or in the file that 'file' names",
        )
    marks = {name: getattr(section, name) for name in CharTable.MARKS}
    if len(set(marks.values())) != len(marks):
        raise DamagedFileError("E003", path=path, key=key, found=marks, expected="six distinct marks")
    if len(section.entries) != n_characters:
        raise DamagedFileError(
            "E003",
            path=path,
            key="char_cnn.n_characters",
            found=n_characters,
            expected=f"the size of char_cnn.char_table ({len(section.entries)})",
        )
    return CharTable(_checked_entries(section.entries, marks, key, path), **marks)


def _word_table(section: "_WordTableSection", path: Union[str, Path]) -> WordTable:
    """The word table of a checked ``word_table`` section."""
    if section.entries is None:
        raise DamagedFileError(
            "E003",
            path=path,
            key="word_table.entries",
            found=None,
            expected="the table's entries, inline or in the file that 'file' names",
        )
    if len(section.entries) != section.n_words:
        raise DamagedFileError(
            "E003",
            path=path,
            key="word_table.n_words",
            found=section.n_words,
            expected=f"the size of the word table ({len(section.entries)})",
        )
    marks = {name: getattr(section, name) for name in WordTable.MARKS}
    entries = _checked_entries(section.entries, {"unknown": section.unknown}, "word_table", path)
    return WordTable(entries, dim=section.dim, **marks)


def _read_small_file(path: Path) -> str:
    """The text of the options file `path`, once it is found to be a regular
    file (E010) of at most `MAX_OPTIONS_BYTES` (E011). It is opened without
    blocking, so that a named pipe is refused, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(fd)
            check_regular_file(path, info.st_mode, "options")
            with open(fd, "rb", closefd=False) as file:
                data = file.read(MAX_OPTIONS_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_OPTIONS_BYTES:  # (a file under /proc says it has 0 bytes)
            size = f"{info.st_size:,}" if info.st_size > MAX_OPTIONS_BYTES else f"more than {MAX_OPTIONS_BYTES:,}"
            raise DamagedFileError("E011", path=path, size=size, limit=MAX_OPTIONS_BYTES)
        return data.decode("utf8")
    except (OSError, UnicodeDecodeError) as err:
        raise DamagedFileError("E001", kind="options", path=path, reason=err) from err


# What a file of each kind but a regular one is, as messages name it.
_NOT_REGULAR = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_regular_file(path: Path, mode: int, kind: str) -> None:
    """E010 unless `mode` (of `path`, its links followed) is a regular file's.
    kind: "options" or "weights", the ELMo file `path` should be."""
    if stat.S_ISREG(mode):
        return
    found = next((name for is_kind, name in _NOT_REGULAR if is_kind(mode)), "a special file")
    target = os.path.realpath(path)
    if target != os.path.abspath(path):
        found += f" ('{target}', where the link leads)"
    raise InputError("E010", kind=kind, path=path, found=found)


# The schema of options.json. Each field's description is what an error says it expected.
_Dim = Annotated[StrictInt, Field(ge=1, le=MAX_DIM, description=f"an integer from 1 to {MAX_DIM}")]
_Clip = Annotated[
    Optional[Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]],
    Field(description="a finite number >= 0 (0 or null: no clipping)"),
]
_Filter = Annotated[List[Annotated[StrictInt, Field(ge=1, le=MAX_DIM)]], Field(min_length=2, max_length=2)]
_SECTION = ConfigDict(extra="ignore")  # bilm-tf's files hold training settings too


_Mark = Annotated[StrictStr, Field(min_length=1, description="a non-empty string, an entry of the table")]
_Entries = Optional[List[StrictStr]]


class _CharTableSection(BaseModel):
    model_config = _SECTION
    entries: _Entries = Field(
        None, max_length=MAX_CHAR_TABLE, description=(f"a list of at most {MAX_CHAR_TABLE:,} strings")
    )
    begin_word: _Mark
    end_word: _Mark
    begin_sentence: _Mark
    end_sentence: _Mark
    padding: _Mark
    unknown: _Mark


class _WordTableSection(BaseModel):
    model_config = _SECTION
    entries: _Entries = Field(
        None, max_length=MAX_WORD_TABLE, description=(f"a list of at most {MAX_WORD_TABLE:,} strings")
    )
    n_words: StrictInt = Field(ge=1, le=MAX_WORD_TABLE, description=f"an integer from 1 to {MAX_WORD_TABLE}")
    dim: _Dim
    unknown: _Mark
    begin_sentence: _Mark
    end_sentence: _Mark


class _Embedding(BaseModel):
    model_config = _SECTION
    dim: _Dim


class _CharCNN(BaseModel):
    model_config = _SECTION
    embedding: _Embedding
    filters: List[_Filter] = Field(
        min_length=1,
        max_length=MAX_FILTERS,
        description=(f"a list of 1 to {MAX_FILTERS} [width, n_filters] pairs, each an integer from 1 to {MAX_DIM}"),
    )
    n_highway: StrictInt = Field(ge=0, le=MAX_LAYERS, description=f"an integer from 0 to {MAX_LAYERS}")
    n_characters: StrictInt = Field(
        ge=1, le=MAX_CHAR_TABLE, description=("261 or 262 (UTF-8 bytes), or the size of char_cnn.char_table")
    )
    max_characters_per_token: StrictInt = Field(
        ge=3,
        le=MAX_CHARACTERS_PER_TOKEN,
        description=(f"an integer from 3 to {MAX_CHARACTERS_PER_TOKEN}, at least the widest filter"),
    )
    activation: Literal["relu", "tanh"] = Field(description="'relu' or 'tanh'")
    char_table: Optional[_CharTableSection] = None


class _LSTM(BaseModel):
    model_config = _SECTION
    dim: _Dim
    projection_dim: _Dim
    n_layers: StrictInt = Field(ge=1, le=MAX_LAYERS, description=f"an integer from 1 to {MAX_LAYERS}")
    cell_clip: _Clip
    proj_clip: _Clip
    use_skip_connections: StrictBool = Field(description="true or false")


class _OptionsFile(BaseModel):
    model_config = _SECTION
    char_cnn: _CharCNN
    lstm: _LSTM
    word_table: Optional[_WordTableSection] = None


def _coded(error: Dict[str, Any], path: Union[str, Path]) -> DamagedFileError:
    """A pydantic error as E002 (missing key) or E003 (wrong value)."""
    names = [part for part in error["loc"] if isinstance(part, str)]
    key = ".".join(names) or "<root>"
    if error["type"] == "missing":
        return DamagedFileError("E002", path=path, key=key)
    key += "".join(f"[{part}]" for part in error["loc"][len(names) :])
    expected = None
    section: Any = _OptionsFile
    for name in names:
        info = section.model_fields[name]
        expected = info.description
        section = _optional_of(info.annotation)
    if isinstance(section, type) and issubclass(section, BaseModel) and error["type"] == "model_type":
        expected = "a JSON object"
    if expected is None:  # a constraint the schema does not describe
        expected = str(error["msg"]).replace("Input should be ", "", 1)
    return DamagedFileError("E003", path=path, key=key, expected=expected, found=error["input"])


def _optional_of(annotation: Any) -> Any:
    """X for ``Optional[X]``, else `annotation` as it is."""
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    return args[0] if get_origin(annotation) is Union and len(args) == 1 else annotation
