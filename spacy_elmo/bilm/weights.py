"""Reading and writing the AllenNLP/bilm-tf weight files (HDF5, TensorFlow layout).

Dataset names and layouts, for filters i, highway layers k, directions d and
LSTM layers l (F = total filters, p = projection, c = LSTM cells):

    char_embed                      (261, char_dim)   ids 1..261; id 0 is ours
    CNN/W_cnn_i, CNN/b_cnn_i        (1, width, char_dim, n), (n,)
    CNN_high_k/W_carry, b_carry     (F, F), (F,)      the gate
    CNN_high_k/W_transform, b_transform                the relu branch
    CNN_proj/W_proj, b_proj         (F, p), (p,)
    RNN_d/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0   (p + p, 4c): [input; hidden] rows
                                           /B     (4c,)  gates i, j, f, o
                                           /W_P_0 (c, p)
"""
import json
import re
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

import h5py
import numpy
import torch

from ..errors import ConfigError, DamagedFileError, DivergedRunError, InputError
from ..disk import hdf5_writer, writing
from ..util import atomic_path, make_parent_dir
from .options import BiLMOptions

OPTIONS_NAME = "options.json"
WEIGHTS_NAME = "weights.hdf5"


def resolve_paths(options_path, weights_path=None) -> Tuple[Path, Path]:
    """Accept ``(options.json, weights.hdf5)`` or a directory holding both.

    In a directory, ``options.json`` + ``weights.hdf5`` (as `save_allennlp`
    writes them) come first; otherwise one ``*options.json`` and one
    ``*weights.hdf5``, as AllenNLP publishes them
    (``elmo_2x4096_512_2048cnn_2xhighway_options.json`` …), are taken.
    """
    options_path = Path(options_path)
    if weights_path is None or options_path.is_dir():
        directory = options_path
        if not directory.is_dir():
            raise DamagedFileError(
                "E001", kind="options", path=directory, reason="no such directory, and no weights file given"
            )
        return _find_pair(directory)
    return options_path, Path(weights_path)


def _find_pair(directory: Path) -> Tuple[Path, Path]:
    if (directory / OPTIONS_NAME).exists() and (directory / WEIGHTS_NAME).exists():
        return directory / OPTIONS_NAME, directory / WEIGHTS_NAME
    options = sorted(directory.glob("*options.json"))
    weights = sorted(directory.glob("*weights.hdf5"))
    if len(options) == 1 and len(weights) == 1:
        return options[0], weights[0]
    found = sorted(p.name for p in directory.iterdir()) or "an empty directory"
    raise InputError("E006", path=directory, found=found)


def _parameters(model) -> Iterator[Tuple[str, torch.Tensor, Tuple[int, ...], str]]:
    """Every (dataset name, target tensor, file shape, how to convert) of a model.

    Conversions: "copy" as is; "T" transposed; "conv" (1, w, dim, n) <-> (n, dim, w);
    "gates" the file's (..., 4c) holds the four gates side by side, ours is
    (4, ..., c); "stack" the file's rows are [input; hidden], each as "gates".
    """
    opts: BiLMOptions = model.options
    enc = model.token_encoder
    F, p, c = opts.n_filters, opts.projection_dim, opts.lstm_dim
    yield "char_embed", enc.char_embed[1:], (enc.char_embed.shape[0] - 1, opts.char_embedding_dim), "copy"
    for i, ((width, n), conv) in enumerate(zip(opts.filters, enc.convs)):
        yield f"CNN/W_cnn_{i}", conv.weight, (1, width, opts.char_embedding_dim, n), "conv"
        yield f"CNN/b_cnn_{i}", conv.bias, (n,), "copy"
    for k, highway in enumerate(enc.highways):
        for part in ("carry", "transform"):
            yield f"CNN_high_{k}/W_{part}", getattr(highway, f"W_{part}"), (F, F), "copy"
            yield f"CNN_high_{k}/b_{part}", getattr(highway, f"b_{part}"), (F,), "copy"
    yield "CNN_proj/W_proj", enc.projection.weight, (F, p), "T"
    yield "CNN_proj/b_proj", enc.projection.bias, (p,), "copy"
    lstm = model.lstm
    for d in range(2):
        for layer in range(opts.n_layers):
            prefix = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            yield f"{prefix}/W_0", (lstm.W_input[layer][d], lstm.W_hidden[layer][d]), (2 * p, 4 * c), "stack"
            yield f"{prefix}/B", lstm.bias[layer][d], (4 * c,), "gates"
            yield f"{prefix}/W_P_0", lstm.W_proj[layer][d], (c, p), "copy"


def _split_gates(value: numpy.ndarray) -> numpy.ndarray:
    """(..., 4c) with the gates side by side -> (4, ..., c)."""
    per_gate = value.reshape(*value.shape[:-1], 4, value.shape[-1] // 4)
    return numpy.ascontiguousarray(numpy.moveaxis(per_gate, -2, 0))


def _join_gates(tensor: torch.Tensor) -> numpy.ndarray:
    """(4, ..., c) -> (..., 4c) with the gates side by side."""
    value = numpy.moveaxis(tensor.detach().float().cpu().numpy(), 0, -2)
    return value.reshape(*value.shape[:-2], -1)


# Which option says how many of each numbered dataset there are.
_COUNTED_BY = [
    (re.compile(r"CNN/[Wb]_cnn_\d+$"), "char_cnn.filters", "convolutions"),
    (re.compile(r"CNN_high_\d+/"), "char_cnn.n_highway", "highway layers"),
    (re.compile(r"RNN_\d+/RNN/MultiRNNCell/Cell\d+/"), "lstm.n_layers", "LSTM layers"),
]


def _datasets(fin: h5py.File) -> List[str]:
    names: List[str] = []
    fin.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
    return names


def _check_all_used(names: List[str], used: set, path: str, options_path) -> None:
    """Every dataset in the file must have gone into the model: options that
    describe fewer layers than the file holds would silently drop some."""
    for name in sorted(set(names) - used):
        why = "it is not part of the bilm-tf layout"
        fix = "check that the two files belong to the same model"
        for pattern, key, kind in _COUNTED_BY:
            if pattern.match(name):
                why = f"'{key}' describes fewer {kind} than the weights hold"
                fix = f"set '{key}' to match the weights, or {fix}"
                break
        raise DamagedFileError(
            "E501", path=path, dataset=name, options=options_path, why=why, fix=fix
        )


def _describe(weights_path) -> str:
    """A weights path as messages name it ('<in-memory HDF5>' for a file object)."""
    if isinstance(weights_path, (str, Path)):
        return str(weights_path)
    return getattr(weights_path, "name", None) or "<in-memory HDF5>"


def load_weights(model, weights_path, options_path: Optional[Path] = None) -> None:
    """Copy a bilm-tf HDF5 file's weights into `model`. Every dataset is
    checked by `_read_dataset` before anything is copied, and every dataset
    in the file must be used.

    weights_path: a path, or a binary file object holding HDF5.
    """
    path = _describe(weights_path)
    try:
        fin = h5py.File(weights_path, "r")
    except (OSError, ValueError) as err:
        raise DamagedFileError("E001", kind="weights", path=path, reason=err) from err
    with fin:
        parameters = list(_parameters(model))
        values = [_read_dataset(fin, name, shape, path, options_path) for name, _, shape, _ in parameters]
        _check_all_used(_datasets(fin), {name for name, *_ in parameters}, path, options_path)
    model.clear_token_cache()  # it holds vectors of the weights about to be replaced
    with torch.no_grad():
        for (name, target, shape, how), value in zip(parameters, values):
            if how == "conv":
                value = value[0].transpose(2, 1, 0)
            elif how == "T":
                value = value.T
            if how == "stack":
                p = target[0].shape[1]
                target[0].copy_(torch.from_numpy(_split_gates(value[:p])))
                target[1].copy_(torch.from_numpy(_split_gates(value[p:])))
            elif how == "gates":
                target.copy_(torch.from_numpy(_split_gates(value)))
            else:
                target.copy_(torch.from_numpy(numpy.ascontiguousarray(value)))


_FLOAT32_MAX = float(numpy.finfo(numpy.float32).max)


def _get(fin: h5py.File, name: str):
    """The object at `name`, or None where there is none or a link to it does not resolve."""
    try:
        return fin.get(name)
    except (KeyError, OSError, ValueError):  # e.g. an external link into a file that is not HDF5
        return None


def _check_links(fin: h5py.File, name: str, path: str) -> None:
    """E008 when a soft or external link on the way to `name` does not resolve."""
    parts = name.split("/")
    for k in range(1, len(parts) + 1):
        where = "/".join(parts[:k])
        link = fin.get(where, getlink=True)
        if link is None:
            return
        if isinstance(link, (h5py.SoftLink, h5py.ExternalLink)) and _get(fin, where) is None:
            target = f"'{link.path}'"
            if isinstance(link, h5py.ExternalLink):
                target += f" in the file '{link.filename}'"
            if where != name:
                target += f" (through the link '{where}')"
            raise DamagedFileError("E008", path=path, dataset=name, target=target)


def _read_dataset(fin: h5py.File, name: str, shape: Tuple[int, ...], path: str, options_path) -> numpy.ndarray:
    """The dataset `name` of `fin` as float32, once it has been found to be
    there (E004), reachable (a link that resolves, E008), of the right shape
    (E005) and of real numbers (E009) that are finite (E502) and fit float32
    (E009).

    Float datasets of any width and integer datasets are read as float32:
    float16 and integers up to 2**24 exactly, float64 rounded to the nearest
    float32. Complex, boolean, string and compound datasets are refused.
    """
    dataset = _get(fin, name)
    if dataset is None:
        _check_links(fin, name, path)
    if not isinstance(dataset, h5py.Dataset):
        raise DamagedFileError("E004", path=path, dataset=name, options=options_path)
    found = None if dataset.shape is None else tuple(dataset.shape)  # None: an empty (null) dataset
    if found != shape:
        raise DamagedFileError(
            "E005", path=path, dataset=name, found=found, expected=shape, options=options_path,
        )
    kind = dataset.dtype.kind
    if kind not in "fiu":
        why = {"c": "complex numbers have no float32 value", "b": "booleans are not weights"}.get(
            kind, "it does not hold numbers")
        found = "strings" if h5py.check_string_dtype(dataset.dtype) else dataset.dtype
        raise DamagedFileError("E009", path=path, dataset=name, found=found, why=why)
    try:
        value = dataset[...]
    except (OSError, ValueError, TypeError) as err:  # a truncated file, a missing compression filter
        raise DamagedFileError(
            "E001", kind="weights", path=path, reason=f"dataset '{name}' cannot be read ({err})"
        ) from err
    if kind == "f":  # (every integer is within the float32 range)
        finite = numpy.isfinite(value)
        if not finite.all():
            raise DamagedFileError(
                "E502", path=f"'{path}'", dataset=name, count=int(finite.size - finite.sum()), size=int(finite.size),
            )
        if value.size and float(numpy.max(numpy.abs(value))) > _FLOAT32_MAX:
            raise DamagedFileError(
                "E009", path=path, dataset=name, found=dataset.dtype,
                why=f"it holds values beyond the float32 range (+-{_FLOAT32_MAX:.3g})",
            )
    return numpy.asarray(value, dtype=numpy.float32)


def write_weights(model, target, dtype: str = "float32") -> None:
    """Write a model's weights as bilm-tf HDF5 to a binary file object (or a
    path; a file on disk is best written by `save_weights`, which guards the
    writes), each dataset of `dtype`: "float32", or "float16" for half the size
    (loading reads any float width back as float32)."""
    with h5py.File(target, "w") as fout:
        write_datasets(model, fout, dtype)


def write_datasets(model, fout: h5py.File, dtype: str = "float32", check: Callable[[], None] = lambda: None) -> None:
    """Write a model's weights into the open HDF5 file `fout`, calling `check`
    after each dataset (see `spacy_elmo.disk.hdf5_writer`)."""
    storage = storage_dtype(dtype)
    with torch.no_grad():
        for name, source, _, _ in _parameters(model):  # all checked before anything is written
            for tensor in source if isinstance(source, tuple) else (source,):
                finite = torch.isfinite(tensor)
                if not bool(finite.all()):
                    raise DivergedRunError("E536", dataset=name, count=int(finite.numel() - finite.sum()),
                                           size=finite.numel())
        for name, source, _, how in _parameters(model):
            if how == "stack":
                value = numpy.concatenate([_join_gates(source[0]), _join_gates(source[1])])
            elif how == "gates":
                value = _join_gates(source)
            else:
                value = source.detach().float().cpu().numpy()
            if how == "conv":
                value = value.transpose(2, 1, 0)[None]
            elif how == "T":
                value = value.T
            fout.create_dataset(name, data=as_storage(value, storage, name))
            check()


def storage_dtype(dtype: str) -> numpy.dtype:
    """The numpy type of a weight file's datasets: "float32" or "float16" (E532 otherwise)."""
    if dtype not in ("float32", "float16"):
        raise ConfigError("E532", found=dtype, why="weights are stored as float32 or float16 only")
    return numpy.dtype(dtype)


def as_storage(value: numpy.ndarray, storage: numpy.dtype, name: str) -> numpy.ndarray:
    """`value` as `storage`, contiguous; float16 only where every finite value is within its range
    (E532), so that no finite weight becomes infinite. (`write_datasets` refuses weights that are
    NaN or infinite before it writes any, E536: loading would refuse them, E502.)"""
    if storage == numpy.float16:
        finite = numpy.abs(value[numpy.isfinite(value)])
        largest = float(finite.max()) if finite.size else 0.0
        if largest > float(numpy.finfo(numpy.float16).max):
            raise ConfigError("E532", found="float16",
                              why=f"'{name}' holds {largest:.6g}, beyond float16's +-65504")
    return numpy.ascontiguousarray(value, dtype=storage)


def save_weights(model, directory, dtype: str = "float32") -> None:
    """Write ``options.json`` and ``weights.hdf5`` (datasets of `dtype`, see
    `write_weights`) into `directory`, each atomically. A disk that is full or
    read-only is a coded error (E513, E514), and no temporary file is left."""
    directory = Path(directory)
    weights, options = directory / WEIGHTS_NAME, directory / OPTIONS_NAME
    make_parent_dir(weights)
    storage_dtype(dtype)  # a wrong dtype is refused before anything is written
    with writing(weights), atomic_path(weights) as tmp, hdf5_writer(tmp, weights) as (fout, check):
        write_datasets(model, fout, dtype, check)
    with writing(options), atomic_path(options) as tmp:
        tmp.write_text(json.dumps(model.options.to_allennlp(), indent=2), encoding="utf8")
