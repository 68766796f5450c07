"""ELMoForManyLangs' models (HIT-SCIR, the NLPL repository's zips 136-179) as a biLM.

A model is the folder its zip unpacks to: ``config.json`` naming the
architecture JSON, ``char.dic`` and ``word.dic`` (``<entry>\\t<id>`` lines),
``token_embedder.pkl`` and ``encoder.pkl`` (PyTorch state dicts, read by
`safe_pickle.read_state_dict`, never unpickled in general). `read_efml`
turns it into our options (a `CharTable` with ELMoForManyLangs' marks: its
code swaps ``<bow>`` and ``<eow>``, so the begin-word mark is ``<eow>``; a
`WordTable`) and the datasets of a bilm-tf weights file (`weights._layout`),
converting each convention on the way:

- ``Conv1d`` weights (n, dim, width) to bilm-tf's (1, width, dim, n);
- the highway's ``y = g x + (1 - g) relu(A x)``, the nonlinear part and the
  gate in the first and second half of one ``Linear(F, 2F)``, to bilm-tf's
  ``y = g' relu(x W_t) + (1 - g') x``: ``g' = 1 - g`` is the sigmoid of the
  negated gate, so W_carry and b_carry are the gate's weights negated;
- the LSTM's gates (input, forget, new input, output) in ``input_linearity``
  (no bias) and ``state_linearity`` (the bias, the forget gate's trained into
  it) to bilm-tf's (input, new input, forget, output) with the forget gate's 1
  added at run time: 1 is subtracted from it here;
- the projection's input [word vector; highway output], as our encoder joins them.

The architecture must be a ``cnn`` token embedder and an ``elmo`` encoder
(every published model's), else E902.
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy
import torch

from ..errors import DamagedFileError
from .options import BiLMOptions
from .safe_pickle import read_state_dict

PathLike = Union[str, Path]

CONFIG_NAME = "config.json"
CHAR_TABLE_NAME = "char.dic"
WORD_TABLE_NAME = "word.dic"
TOKEN_EMBEDDER_NAME = "token_embedder.pkl"
ENCODER_NAME = "encoder.pkl"

# The architecture ELMoForManyLangs ships under both of these names (the two
# files are identical), which its code reads when a model's folder lacks the
# file its config.json names.
SHIPPED_ARCHITECTURE_NAMES = ("cnn_50_100_512_4096_sample.json", "cnn_0_100_512_4096_sample.json")
SHIPPED_ARCHITECTURE = {
    "encoder": {"name": "elmo", "projection_dim": 512, "cell_clip": 3, "proj_clip": 3, "dim": 4096, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
}

# ELMoForManyLangs' marks, as its code uses them: a token starts with the id of
# "<eow>" and ends with that of "<bow>".
CHAR_MARKS = dict(
    begin_word="<eow>", end_word="<bow>", begin_sentence="<bos>", end_sentence="<eos>", padding="<pad>", unknown="<oov>"
)
WORD_MARKS = dict(unknown="<oov>", begin_sentence="<bos>", end_sentence="<eos>")
# The line of a table whose entry is whitespace alone: its code reads it as this character.
WHITESPACE_ENTRY = "\u3000"
# Our gate order (input, new input, forget, output) as blocks of ELMoForManyLangs' (input, forget, new input, output).
GATE_BLOCKS = (0, 2, 1, 3)
FORGET_GATE = 2  # in our order


def is_efml_folder(path: PathLike) -> bool:
    """Whether `path` is a folder holding an ELMoForManyLangs model (its config.json and encoder.pkl)."""
    path = Path(path)
    return (path / CONFIG_NAME).is_file() and (path / ENCODER_NAME).is_file()


def read_efml(folder: PathLike) -> Tuple[BiLMOptions, Dict[str, numpy.ndarray]]:
    """The options of an ELMoForManyLangs model's folder, and its weights as
    the datasets of a bilm-tf weights file (by name, float32), for
    `weights.copy_weights`. Errors: E902 (a file missing, an architecture this
    biLM is not), E903 (a table), E901/E001 (a state dict), E502 (weights not
    finite), and the options' own (E003...)."""
    folder = Path(folder)
    architecture = _architecture(folder)
    chars = _read_dic(folder / CHAR_TABLE_NAME, "character")
    has_words = _has_positive(architecture["token_embedder"], "word_dim")
    words = _read_dic(folder / WORD_TABLE_NAME, "word") if has_words else None
    try:
        options_dict = _options_dict(architecture, chars, words)
    except (KeyError, TypeError) as err:
        raise DamagedFileError(
            "E902",
            path=folder,
            problem=f"has an architecture JSON without {err}",
            fix="Use the architecture JSON that came with the model.",
        ) from None
    options = BiLMOptions.from_allennlp(options_dict, folder / CONFIG_NAME)
    token_embedder = _state_dict(folder / TOKEN_EMBEDDER_NAME)
    lstm = _state_dict(folder / ENCODER_NAME)
    values = {
        **_token_encoder_datasets(token_embedder, options, folder / TOKEN_EMBEDDER_NAME),
        **_lstm_datasets(lstm, options, folder / ENCODER_NAME),
    }
    _check_finite(values, folder)
    return options, values


def _options_dict(architecture: Dict[str, Any], chars: List[str], words: Optional[List[str]]) -> Dict[str, Any]:
    """Our options.json's dict for an ELMoForManyLangs architecture and its tables."""
    embedder, encoder = architecture["token_embedder"], architecture["encoder"]
    return {
        "char_cnn": {
            "embedding": {"dim": embedder["char_dim"]},
            "filters": embedder["filters"],
            "n_highway": embedder["n_highway"],
            "n_characters": len(chars),
            "max_characters_per_token": embedder["max_characters_per_token"],
            "activation": embedder["activation"],
            "char_table": {"entries": chars, **CHAR_MARKS},
        },
        "lstm": {
            "dim": encoder["dim"],
            "projection_dim": encoder["projection_dim"],
            "n_layers": encoder["n_layers"],
            "cell_clip": _clip(encoder.get("cell_clip")),
            "proj_clip": _clip(encoder.get("proj_clip")),
            "use_skip_connections": True,
        },
        **(
            {}
            if words is None
            else {
                "word_table": {
                    "entries": words,
                    "n_words": len(words),
                    "dim": embedder["word_dim"],
                    **WORD_MARKS,
                }
            }
        ),
    }


def _architecture(folder: Path) -> Dict[str, Any]:
    """The architecture JSON config.json names: in `folder` as ELMoForManyLangs
    looks for it (the path as written, then its file name in the folder; a
    path leading out of the folder is not followed), or the architecture it
    ships under that name."""
    config = _read_json(folder / CONFIG_NAME, folder)
    named = config.get("config_path") if isinstance(config, dict) else None
    if not isinstance(named, str):
        raise DamagedFileError(
            "E902",
            path=folder,
            problem=f"has a {CONFIG_NAME} without 'config_path'",
            fix=f"Restore the model's {CONFIG_NAME}.",
        )
    inside = (folder / named).resolve().is_relative_to(folder.resolve())
    for candidate in ((folder / named,) if inside else ()) + (folder / Path(named).name,):
        if candidate.is_file():
            architecture = _read_json(candidate, folder)
            break
    else:
        if Path(named).name not in SHIPPED_ARCHITECTURE_NAMES:
            raise DamagedFileError(
                "E902",
                path=folder,
                problem=f"lacks the architecture file '{named}'",
                fix=f"Put '{Path(named).name}' (from the model's zip) in the folder.",
            )
        architecture = SHIPPED_ARCHITECTURE
    sections = [
        architecture.get(key) if isinstance(architecture, dict) else None for key in ("token_embedder", "encoder")
    ]
    if not all(isinstance(section, dict) for section in sections):
        raise DamagedFileError(
            "E902",
            path=folder,
            problem="has an architecture JSON without its two sections",
            fix="Use the architecture JSON that came with the model ('token_embedder', 'encoder').",
        )
    embedder, encoder = sections
    kinds = (str(embedder.get("name", "")).lower(), str(encoder.get("name", "")).lower())
    if kinds != ("cnn", "elmo"):
        problem = f"is a '{kinds[0]}' token embedder and '{kinds[1]}' encoder"
        raise DamagedFileError(
            "E902",
            path=folder,
            problem=problem,
            fix="Only the character CNN and ELMo encoder (every published model's) load.",
        )
    if not _has_positive(embedder, "char_dim"):
        raise DamagedFileError(
            "E902",
            path=folder,
            problem="has no character embedding (char_dim 0)",
            fix="Only models with a character CNN load.",
        )
    return architecture


def _has_positive(section: Dict[str, Any], key: str) -> bool:
    """Whether the architecture's `section` sets `key` to an integer above 0."""
    value = section.get(key, 0)
    return isinstance(value, int) and value > 0


def _read_json(path: Path, folder: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DamagedFileError(
            "E902",
            path=folder,
            problem=f"has a '{path.name}' that cannot be read ({err})",
            fix="Unzip the model again.",
        ) from err


def _read_dic(path: Path, kind: str) -> List[str]:
    """The entries of a ``.dic`` table by id, read as ELMoForManyLangs reads it:
    its lines (every Unicode line break, as Python's codecs split them), each
    stripped of whitespace and split at tabs into entry and id, a line of one
    field being the id of U+3000 (an entry of whitespace alone); a later line
    replaces an earlier one of the same entry. Here the ids must then be 0 to
    n - 1, each once (E903)."""
    try:
        text = path.read_text(encoding="utf8")
    except FileNotFoundError:
        raise DamagedFileError(
            "E902",
            path=path.parent,
            problem=f"has no '{path.name}'",
            fix=f"Put the model's '{path.name}' in the folder.",
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise DamagedFileError(
            "E903", kind=kind, path=path, problem=f"cannot be read ({err})", expected="UTF-8 text"
        ) from err
    ids: Dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, WHITESPACE_ENTRY)
        try:
            entry, i = fields
            ids[entry] = int(i)
        except ValueError:  # not two fields, or an id that is not a number
            raise DamagedFileError(
                "E903",
                kind=kind,
                path=path,
                problem=f"has line {number} {line!r:.60}",
                expected="lines '<entry>\\t<id>', the id a number",
            ) from None
    entries = [""] * len(ids)
    for entry, i in ids.items():
        if not 0 <= i < len(ids) or entries[i]:
            raise DamagedFileError(
                "E903",
                kind=kind,
                path=path,
                problem=f"gives {entry!r} the id {i}",
                expected=f"the ids 0 to {len(ids) - 1}, each once",
            )
        entries[i] = entry
    return entries


def _clip(value: Any) -> Any:
    """A clip as options.json holds it (a number; ELMoForManyLangs writes integers)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _state_dict(path: Path) -> Dict[str, numpy.ndarray]:
    if not path.is_file():
        raise DamagedFileError(
            "E902",
            path=path.parent,
            problem=f"has no '{path.name}'",
            fix=f"Put the model's '{path.name}' in the folder.",
        )
    return {name: tensor.float().numpy() for name, tensor in read_state_dict(path).items()}


def _take(state: Dict[str, numpy.ndarray], name: str, shape: Tuple[int, ...], path: Path) -> numpy.ndarray:
    """The tensor `name` of a state dict, once found of `shape` (E902)."""
    value = state.get(name)
    if value is None or value.shape != shape:
        found = f"no tensor '{name}'" if value is None else f"'{name}' of shape {value.shape}"
        raise DamagedFileError(
            "E902",
            path=path,
            problem=f"holds {found}, expected {shape}",
            fix="Check that the weights and the architecture JSON come from the same zip.",
        )
    return value


def _token_encoder_datasets(
    state: Dict[str, numpy.ndarray], options: BiLMOptions, path: Path
) -> Dict[str, numpy.ndarray]:
    """The token embedder's state dict (read from `path`) as bilm-tf datasets
    (see the module's docstring)."""
    F, p, e, w = options.n_filters, options.projection_dim, options.char_embedding_dim, options.word_dim
    n_chars = len(options.char_table.entries)
    values = {"char_embed": _take(state, "char_emb_layer.embedding.weight", (n_chars, e), path)}
    if options.word_table is not None:
        n_words = len(options.word_table.entries)
        values["word_embed"] = _take(state, "word_emb_layer.embedding.weight", (n_words, w), path)
    for i, (width, n) in enumerate(options.filters):
        weight = _take(state, f"convolutions.{i}.weight", (n, e, width), path)
        values[f"CNN/W_cnn_{i}"] = weight.transpose(2, 1, 0)[None]
        values[f"CNN/b_cnn_{i}"] = _take(state, f"convolutions.{i}.bias", (n,), path)
    for k in range(options.n_highway):
        weight = _take(state, f"highways._layers.{k}.weight", (2 * F, F), path)
        bias = _take(state, f"highways._layers.{k}.bias", (2 * F,), path)
        values[f"CNN_high_{k}/W_transform"], values[f"CNN_high_{k}/b_transform"] = _transposed(weight[:F]), bias[:F]
        values[f"CNN_high_{k}/W_carry"], values[f"CNN_high_{k}/b_carry"] = -_transposed(weight[F:]), -bias[F:]
    values["CNN_proj/W_proj"] = _transposed(_take(state, "projection.weight", (p, w + F), path))
    values["CNN_proj/b_proj"] = _take(state, "projection.bias", (p,), path)
    return values


def _lstm_datasets(state: Dict[str, numpy.ndarray], options: BiLMOptions, path: Path) -> Dict[str, numpy.ndarray]:
    """The encoder's state dict (read from `path`) as bilm-tf datasets (see the module's docstring)."""
    p, c = options.projection_dim, options.lstm_dim
    values = {}
    for d, direction in enumerate(("forward", "backward")):
        for layer in range(options.n_layers):
            cell = f"{direction}_layer_{layer}"
            W_input = _take(state, f"{cell}.input_linearity.weight", (4 * c, p), path)
            W_hidden = _take(state, f"{cell}.state_linearity.weight", (4 * c, p), path)
            bias = _reorder_gates(_take(state, f"{cell}.state_linearity.bias", (4 * c,), path))
            bias[FORGET_GATE * c : (FORGET_GATE + 1) * c] -= 1.0  # our LSTM adds it back at run time
            prefix = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            values[f"{prefix}/W_0"] = _transposed(_reorder_gates(W_input, W_hidden))  # [input; hidden] rows
            values[f"{prefix}/B"] = bias
            values[f"{prefix}/W_P_0"] = _transposed(_take(state, f"{cell}.state_projection.weight", (p, c), path))
    return values


def _transposed(matrix: numpy.ndarray) -> numpy.ndarray:
    """A matrix transposed, contiguous (torch's blocked copy: several times numpy's speed on large ones)."""
    return torch.from_numpy(numpy.ascontiguousarray(matrix)).t().contiguous().numpy()


def _reorder_gates(*values: numpy.ndarray) -> numpy.ndarray:
    """(4c, ...) arrays in ELMoForManyLangs' gate order -> one (4c, ...) in
    ours, the arrays side by side on their last axis (one copy)."""
    c = values[0].shape[0] // 4
    widths = [value.shape[1] if value.ndim > 1 else 1 for value in values]
    out = numpy.empty((4 * c, sum(widths)), dtype=numpy.float32)
    for k, block in enumerate(GATE_BLOCKS):
        start = 0
        for value, width in zip(values, widths):
            out[k * c : (k + 1) * c, start : start + width] = value[block * c : (block + 1) * c].reshape(c, width)
            start += width
    return out if values[0].ndim > 1 else out[:, 0]


def _check_finite(values: Dict[str, numpy.ndarray], folder: Path) -> None:
    """E502 for a weight that is NaN or infinite."""
    for name, value in values.items():
        finite = numpy.isfinite(value)
        if not finite.all():
            raise DamagedFileError(
                "E502", path=f"'{folder}'", dataset=name, count=int(finite.size - finite.sum()), size=int(finite.size)
            )
