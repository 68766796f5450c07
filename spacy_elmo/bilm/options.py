"""The biLM architecture, as AllenNLP/bilm-tf ``options.json`` describes it.

An ``options.json`` is checked against a schema (`_OptionsFile`) before anything
is built from it: the types, sane bounds on every size (so that a typo cannot
ask for terabytes), finite clips, and the model's size as a whole. Keys that
the biLM does not use (bilm-tf's training settings) are ignored. The file
itself must be a regular file (a link to one is followed) of at most
`MAX_OPTIONS_BYTES`, so that a named pipe or a device is refused, not read.
"""
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

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

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

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
        projection = F * p + p
        lstm = 2 * self.n_layers * (2 * p * 4 * c + 4 * c + c * p)
        return cnn + highway + projection + lstm

    def to_allennlp(self) -> Dict[str, Any]:
        return {
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
                "E003", path=path, key="char_cnn.max_characters_per_token",
                expected=f"at least the widest filter ({widest})", found=cnn.max_characters_per_token,
            )
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
        )
        if options.n_parameters > MAX_PARAMETERS:
            raise DamagedFileError(
                "E007", path=path, n_parameters=options.n_parameters, gib=options.n_parameters * 4 / 2**30,
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
        return cls.from_allennlp(data, path)


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
    (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
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
_Clip = Annotated[Optional[Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]], Field(
    description="a finite number >= 0 (0 or null: no clipping)"
)]
_Filter = Annotated[List[Annotated[StrictInt, Field(ge=1, le=MAX_DIM)]], Field(min_length=2, max_length=2)]
_SECTION = ConfigDict(extra="ignore")  # bilm-tf's files hold training settings too


class _Embedding(BaseModel):
    model_config = _SECTION
    dim: _Dim


class _CharCNN(BaseModel):
    model_config = _SECTION
    embedding: _Embedding
    filters: List[_Filter] = Field(min_length=1, max_length=MAX_FILTERS, description=(
        f"a list of 1 to {MAX_FILTERS} [width, n_filters] pairs, each an integer from 1 to {MAX_DIM}"
    ))
    n_highway: StrictInt = Field(ge=0, le=MAX_LAYERS, description=f"an integer from 0 to {MAX_LAYERS}")
    n_characters: StrictInt = Field(ge=261, le=262, description="261 or 262")
    max_characters_per_token: StrictInt = Field(ge=3, le=MAX_CHARACTERS_PER_TOKEN, description=(
        f"an integer from 3 to {MAX_CHARACTERS_PER_TOKEN}, at least the widest filter"
    ))
    activation: Literal["relu", "tanh"] = Field(description="'relu' or 'tanh'")


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


def _coded(error: Dict[str, Any], path: Union[str, Path]) -> DamagedFileError:
    """A pydantic error as E002 (missing key) or E003 (wrong value)."""
    names = [part for part in error["loc"] if isinstance(part, str)]
    key = ".".join(names) or "<root>"
    if error["type"] == "missing":
        return DamagedFileError("E002", path=path, key=key)
    key += "".join(f"[{part}]" for part in error["loc"][len(names):])
    expected = None
    section: Any = _OptionsFile
    for name in names:
        info = section.model_fields[name]
        expected = info.description
        section = info.annotation
    if isinstance(section, type) and issubclass(section, BaseModel) and error["type"] == "model_type":
        expected = "a JSON object"
    if expected is None:  # a constraint the schema does not describe
        expected = str(error["msg"]).replace("Input should be ", "", 1)
    return DamagedFileError("E003", path=path, key=key, expected=expected, found=error["input"])
