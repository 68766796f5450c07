"""Reading and writing the AllenNLP/bilm-tf weight files (HDF5, TensorFlow layout).

Dataset names and layouts, for filters i, highway layers k, directions d and
LSTM layers l (F = total filters, p = projection, c = LSTM cells):

    char_embed                      (261, char_dim)   ids 1..261; id 0 is ours (a table's size with a char table)
    word_embed                      (n_words, word_dim)  with a word table only; id 0 is ours
    CNN/W_cnn_i, CNN/b_cnn_i        (1, width, char_dim, n), (n,)
    CNN_high_k/W_carry, b_carry     (F, F), (F,)      the gate
    CNN_high_k/W_transform, b_transform                the relu branch
    CNN_proj/W_proj, b_proj         (word_dim + F, p), (p,)  rows: [word vector; highway output]
    RNN_d/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0   (p + p, 4c): [input; hidden] rows
                                           /B     (4c,)  gates i, j, f, o
                                           /W_P_0 (c, p)

A weights file is read by itself: an external link, a dataset stored in raw
files beside it or a virtual dataset over other files is refused (E012), so
that a file handed over cannot make HDF5 read other paths.
"""

import os
import re
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import h5py
import numpy
import torch

from ..disk import hdf5_writer, writing
from ..errors import ConfigError, DamagedFileError, DivergedRunError, InputError, OutputError
from ..util import atomic_path, make_parent_dir
from .options import OPTIONS_NAME, BiLMOptions, check_regular_file

WEIGHTS_NAME = "weights.hdf5"


def resolve_paths(options_path, weights_path=None) -> Tuple[Path, Path]:
    """Accept ``(options.json, weights.hdf5)``, a directory holding both, or
    a model's name (a str: "elmo-en-small", which ships with the package, or
    a published model's, see `spacy_elmo.published_models.model_folder`).

    In a directory, ``options.json`` + ``weights.hdf5`` (as `save_allennlp`
    writes them) come first; otherwise one ``*options.json`` and one
    ``*weights.hdf5``, as AllenNLP publishes them
    (``elmo_2x4096_512_2048cnn_2xhighway_options.json`` …), are taken.
    """
    if weights_path is None and isinstance(options_path, str):
        from ..published_models import model_folder  # its download client is imported only here

        options_path = model_folder(options_path)
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


class _Dataset(NamedTuple):
    """One dataset of a weights file: its name and shape there, how its value
    converts (see `_layout`), the biLM's parameters it fills (by their names
    in the state dict) and which part of each (an index)."""

    name: str
    shape: Tuple[int, ...]
    how: str
    parameters: Tuple[str, ...]
    part: Any = Ellipsis


def _layout(opts: BiLMOptions) -> Iterator[_Dataset]:
    """Every dataset of the weights of a biLM of options `opts`, from the
    options alone (no model is needed to check a file's shapes).

    Conversions: "copy" as is; "T" transposed; "conv" (1, w, dim, n) <-> (n, dim, w);
    "gates" the file's (..., 4c) holds the four gates side by side, ours is
    (4, ..., c); "stack" the file's rows are [input; hidden], each as "gates".
    """
    F, p, c, e = opts.n_filters, opts.projection_dim, opts.lstm_dim, opts.char_embedding_dim
    # The file has no row for id 0 (no token).
    yield _Dataset("char_embed", (opts.n_char_ids - 1, e), "copy", ("token_encoder.char_embed",), slice(1, None))
    if opts.word_table is not None:
        n_words = len(opts.word_table.entries)
        yield _Dataset("word_embed", (n_words, opts.word_dim), "copy", ("token_encoder.word_embed",), slice(1, None))
    for i, (width, n) in enumerate(opts.filters):
        yield _Dataset(f"CNN/W_cnn_{i}", (1, width, e, n), "conv", (f"token_encoder.convs.{i}.weight",))
        yield _Dataset(f"CNN/b_cnn_{i}", (n,), "copy", (f"token_encoder.convs.{i}.bias",))
    for k in range(opts.n_highway):
        for part in ("carry", "transform"):
            yield _Dataset(f"CNN_high_{k}/W_{part}", (F, F), "copy", (f"token_encoder.highways.{k}.W_{part}",))
            yield _Dataset(f"CNN_high_{k}/b_{part}", (F,), "copy", (f"token_encoder.highways.{k}.b_{part}",))
    yield _Dataset("CNN_proj/W_proj", (opts.word_dim + F, p), "T", ("token_encoder.projection.weight",))
    yield _Dataset("CNN_proj/b_proj", (p,), "copy", ("token_encoder.projection.bias",))
    for d in range(2):
        for layer in range(opts.n_layers):
            prefix = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            inputs = (f"lstm.W_input.{layer}", f"lstm.W_hidden.{layer}")
            yield _Dataset(f"{prefix}/W_0", (2 * p, 4 * c), "stack", inputs, d)
            yield _Dataset(f"{prefix}/B", (4 * c,), "gates", (f"lstm.bias.{layer}",), d)
            yield _Dataset(f"{prefix}/W_P_0", (c, p), "copy", (f"lstm.W_proj.{layer}",), d)


def _targets(model, dataset: _Dataset) -> List[torch.Tensor]:
    """The parts of `model`'s parameters that `dataset` fills."""
    return [model.get_parameter(name)[dataset.part] for name in dataset.parameters]


def _from_file(value: numpy.ndarray, how: str) -> List[numpy.ndarray]:
    """A dataset's value as the parts of its parameters hold it (see `_layout`)."""
    if how == "conv":
        return [value[0].transpose(2, 1, 0)]
    if how == "T":
        return [value.T]
    if how == "gates":
        return [_split_gates(value)]
    if how == "stack":
        p = value.shape[0] // 2
        return [_split_gates(value[:p]), _split_gates(value[p:])]
    return [value]


def _to_file(parts: List[torch.Tensor], how: str) -> numpy.ndarray:
    """The parts of a dataset's parameters as the file holds them (see `_layout`)."""
    if how == "stack":
        return numpy.concatenate([_join_gates(part) for part in parts])
    if how == "gates":
        return _join_gates(parts[0])
    value = parts[0].detach().float().cpu().numpy()
    if how == "conv":
        return value.transpose(2, 1, 0)[None]
    if how == "T":
        return value.T
    return value


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
    """E501 unless every dataset in the file is one the options describe:
    options that describe fewer layers than the file holds would drop some."""
    for name in sorted(set(names) - used):
        why = "it is not part of the bilm-tf layout"
        fix = "check that the two files belong to the same model"
        for pattern, key, kind in _COUNTED_BY:
            if pattern.match(name):
                why = f"'{key}' describes fewer {kind} than the weights hold"
                fix = f"set '{key}' to match the weights, or {fix}"
                break
        raise DamagedFileError("E501", path=path, dataset=name, options=options_path, why=why, fix=fix)


def _describe(weights_path) -> str:
    """A weights path as messages name it ('<in-memory HDF5>' for a file object)."""
    if isinstance(weights_path, (str, Path)):
        return str(weights_path)
    return getattr(weights_path, "name", None) or "<in-memory HDF5>"


def load_weights(model, weights_path, options_path: Optional[Path] = None) -> None:
    """Copy a bilm-tf HDF5 file's weights into `model` (see `read_weights`).

    weights_path: a path, or a binary file object holding HDF5.
    """
    copy_weights(model, read_weights(weights_path, model.options, options_path))


def read_weights(weights_path, options: BiLMOptions, options_path: Optional[Path] = None) -> Dict[str, numpy.ndarray]:
    """The datasets of a bilm-tf HDF5 file, by name, as float32, for a biLM of
    `options`, before any model is built: every dataset is found and checked
    against the options' shapes (`_find_dataset`), and every dataset in the
    file must be one of them (E501), before any value is read (`_read_values`).

    weights_path: a path (of a regular file, E010), or a binary file object holding HDF5.
    """
    path = _describe(weights_path)
    if isinstance(weights_path, (str, Path)):
        _check_regular(Path(weights_path))
    try:
        fin = h5py.File(weights_path, "r")
    except (OSError, ValueError) as err:
        raise DamagedFileError("E001", kind="weights", path=path, reason=err) from err
    with fin:
        _refuse_external_links(fin, path)
        layout = list(_layout(options))
        found = [_find_dataset(fin, dataset, path, options_path) for dataset in layout]
        _check_all_used(_datasets(fin), {dataset.name for dataset in layout}, path, options_path)
        return {dataset.name: _read_values(item, dataset.name, path) for dataset, item in zip(layout, found)}


def copy_weights(model, values: Dict[str, numpy.ndarray]) -> None:
    """Copy the datasets `read_weights` read into `model`, a biLM of the same options."""
    model.clear_token_cache()  # it holds vectors of the weights about to be replaced
    with torch.no_grad():
        for dataset in _layout(model.options):
            for target, value in zip(_targets(model, dataset), _from_file(values[dataset.name], dataset.how)):
                target.copy_(torch.from_numpy(numpy.ascontiguousarray(value)))


def _check_regular(path: Path) -> None:
    """E010 where the weights file `path` is a named pipe, a device or a folder,
    which HDF5 would wait on or fail to read (h5py says why a missing one is missing)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    check_regular_file(path, mode, "weights")


def _refuse_external_links(fin: h5py.File, path: str) -> None:
    """E012 for an external link anywhere in `fin`, before any link is followed."""
    external: List[str] = []

    def note(name: bytes, info) -> None:
        if info.type == h5py.h5l.TYPE_EXTERNAL:
            external.append(name.decode("utf8", "replace"))

    fin.id.links.visit(note, info=True)  # every link, following none but hard links
    if external:
        link = fin.get(external[0], getlink=True)
        source = f"the file '{link.filename}' (an external link to '{link.path}')"
        raise DamagedFileError("E012", path=path, name=external[0], source=source)


_FLOAT32_MAX = float(numpy.finfo(numpy.float32).max)


def _get(fin: h5py.File, name: str):
    """The object at `name`, or None where there is none or a soft link on the way does not resolve."""
    try:
        return fin.get(name)
    except (KeyError, OSError, RuntimeError, ValueError):  # RuntimeError: soft links in a loop
        return None


def _check_links(fin: h5py.File, name: str, path: str) -> None:
    """E008 where a soft link on the way to `name` leads nowhere, or round a
    loop (HDF5 follows at most 16 soft links in a row)."""
    parts = name.split("/")
    for k in range(1, len(parts) + 1):
        where = "/".join(parts[:k])
        link = fin.get(where, getlink=True)
        if link is None:
            return
        if not isinstance(link, h5py.SoftLink):
            continue
        try:
            if fin.get(where) is not None:
                continue
            why = ""
        except RuntimeError:  # HDF5 gave up following the links
            why = " (a loop of soft links, or a chain of more than HDF5 follows)"
        except (KeyError, OSError, ValueError):
            why = ""
        through = f" (through the link '{where}')" if where != name else ""
        raise DamagedFileError("E008", path=path, dataset=name, target=f"'{link.path}'{why}{through}")


def _find_dataset(fin: h5py.File, dataset: _Dataset, path: str, options_path) -> h5py.Dataset:
    """The dataset of `fin` that `dataset` describes, once it has been found to
    be there (E004), reachable (soft links that resolve, E008), holding its own
    data (E012), of the right shape (E005) and of numbers (E009). Only its
    header is read."""
    name = dataset.name
    found = _get(fin, name)
    if found is None:
        _check_links(fin, name, path)
    if not isinstance(found, h5py.Dataset):
        raise DamagedFileError("E004", path=path, dataset=name, options=options_path)
    _refuse_data_elsewhere(found, name, path)
    shape = None if found.shape is None else tuple(found.shape)  # None: an empty (null) dataset
    if shape != dataset.shape:
        raise DamagedFileError(
            "E005",
            path=path,
            dataset=name,
            found=shape,
            expected=dataset.shape,
            options=options_path,
        )
    kind = found.dtype.kind
    if kind not in "fiu":
        why = {"c": "complex numbers have no float32 value", "b": "booleans are not weights"}.get(
            kind, "it does not hold numbers"
        )
        dtype = "strings" if h5py.check_string_dtype(found.dtype) else found.dtype
        raise DamagedFileError("E009", path=path, dataset=name, found=dtype, why=why)
    return found


def _refuse_data_elsewhere(dataset: h5py.Dataset, name: str, path: str) -> None:
    """E012 for a dataset whose values are in other files: raw files (external
    storage), or other HDF5 files that a virtual dataset maps."""
    if dataset.external:
        files = ", ".join(f"'{file}'" for file, *_ in dataset.external)
        raise DamagedFileError("E012", path=path, name=name, source=f"the raw file(s) {files} (external storage)")
    others = sorted({source.file_name for source in dataset.virtual_sources()} - {"."}) if dataset.is_virtual else []
    if others:
        files = ", ".join(f"'{file}'" for file in others)
        raise DamagedFileError("E012", path=path, name=name, source=f"the file(s) {files} (a virtual dataset)")


def _read_values(dataset: h5py.Dataset, name: str, path: str) -> numpy.ndarray:
    """The values of a dataset `_find_dataset` found, as float32, once they are
    found to be finite (E502) and within the float32 range (E009).

    Float datasets of any width and integer datasets are read as float32:
    float16 and integers up to 2**24 exactly, float64 rounded to the nearest
    float32. Complex, boolean, string and compound datasets are refused.
    """
    try:
        value = dataset[...]
    except (OSError, ValueError, TypeError) as err:  # a truncated file, a missing compression filter
        raise DamagedFileError(
            "E001", kind="weights", path=path, reason=f"dataset '{name}' cannot be read ({err})"
        ) from err
    if dataset.dtype.kind == "f":  # (every integer is within the float32 range)
        finite = numpy.isfinite(value)
        if not finite.all():
            raise DamagedFileError(
                "E502",
                path=f"'{path}'",
                dataset=name,
                count=int(finite.size - finite.sum()),
                size=int(finite.size),
            )
        if value.size and float(numpy.max(numpy.abs(value))) > _FLOAT32_MAX:
            raise DamagedFileError(
                "E009",
                path=path,
                dataset=name,
                found=dataset.dtype,
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
    layout = list(_layout(model.options))
    with torch.no_grad():
        for dataset in layout:  # all checked before anything is written
            for tensor in _targets(model, dataset):
                finite = torch.isfinite(tensor)
                if not bool(finite.all()):
                    raise DivergedRunError(
                        "E536", dataset=dataset.name, count=int(finite.numel() - finite.sum()), size=finite.numel()
                    )
        for dataset in layout:
            value = _to_file(_targets(model, dataset), dataset.how)
            fout.create_dataset(dataset.name, data=as_storage(value, storage, dataset.name))
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
            raise ConfigError("E532", found="float16", why=f"'{name}' holds {largest:.6g}, beyond float16's +-65504")
    return numpy.ascontiguousarray(value, dtype=storage)


def save_weights(model, directory, dtype: str = "float32") -> None:
    """Write ``options.json`` and ``weights.hdf5`` (datasets of `dtype`, see
    `write_weights`), and the JSON file of each table the options hold
    (`BiLMOptions.to_files`), into `directory`, each atomically. A disk that is full or
    read-only is a coded error (E513, E514), and no temporary file is left; a
    folder in the place of either file is E540, before anything is written."""
    directory = Path(directory)
    weights, options = directory / WEIGHTS_NAME, directory / OPTIONS_NAME
    make_parent_dir(weights)
    storage_dtype(dtype)  # a wrong dtype is refused before anything is written
    for target, kind in ((weights, "weights"), (options, "options")):
        if target.is_dir():
            raise OutputError("E540", directory=directory, path=target, kind=kind)
    with writing(weights), atomic_path(weights) as tmp, hdf5_writer(tmp, weights) as (fout, check):
        write_datasets(model, fout, dtype, check)
    for name, text in model.options.to_files().items():  # options.json, and any table's file
        with writing(directory / name), atomic_path(directory / name) as tmp:
            tmp.write_text(text, encoding="utf8")
