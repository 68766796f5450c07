"""ELMo vectors of a text file, in HDF5: what ``python -m spacy_elmo embed`` runs.

`embed_file` does what ``allennlp elmo`` does, with the same output
layout. Under ``torchrun`` the processes share the work and write one file
together. The command itself (its arguments, messages and exit codes) is in
`spacy_elmo.cli.embed`.
"""

import io
import json
import os
from contextlib import nullcontext
from pathlib import Path
from typing import IO, BinaryIO, Callable, ContextManager, Dict, List, Optional, Sequence, TypeVar, Union

import h5py
import numpy
import torch
from h5py import h5d, h5p, h5s, h5t
from tqdm import tqdm

from .bilm import BiLM, length_sorted_batches
from .bilm.model import first_token_not_finite
from .bilm.precision import precision as in_precision
from .device import check_device, copied_to_host
from .disk import hdf5_writer
from .distributed import Distributed
from .errors import ConfigError, DivergedRunError, ElmoError, InputError, OutputError
from .util import atomic_path, check_writable, exit_on_sigterm, scratch_path, split_lines

PathLike = Union[str, Path]
LAYER_CHOICES = ("all", "top", "average")
SENTENCE_TO_INDEX = "sentence_to_index"
OVERWRITE_HINT = " To replace it, pass --overwrite (overwrite=True)."
T = TypeVar("T")


def embed_file(
    options: PathLike,
    weights: Optional[PathLike],
    input_path: PathLike,
    output_path: PathLike,
    layers: str = "all",
    batch_size: int = 64,
    device: str = "cpu",
    precision: str = "fp32",
    cuda_graphs: bool = False,
    overwrite: bool = False,
) -> None:
    """Write the ELMo vectors of every line of a text file to a new HDF5 file.

    options, weights: the biLM's ``options.json`` and ``weights.hdf5``
        (AllenNLP/bilm-tf format); or a folder holding both, or a model's
        name (a str: "elmo-en-small"), and None.
    input_path: UTF-8 text, one sentence per line, tokens separated by
        whitespace: a file, or anything else that reads as one, once, from
        start to end (a pipe, /dev/stdin). A blank line is an empty sentence;
        a byte-order mark at the start is not text.
    output_path: the HDF5 file to create; an existing file is refused
        (E202) unless `overwrite`, and a path that ends with "/" or names a
        folder is refused (E515). It holds one float32 dataset per input line, named by the
        line number ("0", "1", ...): ``(n_layers + 1, n_tokens, dim)`` for
        layers="all", ``(n_tokens, dim)`` for "top" (the last layer) and
        "average" (the mean of all layers); a blank line gives 0 tokens. The
        dataset "sentence_to_index" holds one string, a JSON object mapping each
        line's text (stripped) to its dataset name, the last line winning for
        repeated sentences; read it with
        ``json.loads(f["sentence_to_index"][0])``. Datasets are named by line
        number because HDF5 names cannot hold "/", so sentences with "/" (or
        any other text) work.
    layers: "all", "top" or "average".
    batch_size: sentences per batch. Sentences are batched by length, which
        only changes the speed: a sentence's vectors never depend on the others
        in its batch.
    device: the torch device to run on, e.g. "cpu" or "cuda:0".
    precision: "fp32"; "tf32" or "bf16" on a GPU; on a CPU "bf16" where it has the
        instructions for it, "int8" where it is faster for this biLM, "int8-always"
        (see spacy_elmo.bilm.precision).
    cuda_graphs: on a GPU, run the LSTMs from CUDA graphs (`BiLM.use_cuda_graphs`):
        the same vectors within float32 rounding, fewer launches from Python.
    overwrite: replace an existing file at `output_path` (never a folder).

    The file is written beside `output_path` under a temporary name and moved
    into place at the end, so an interrupted run (an error, Ctrl-C or
    SIGTERM) leaves no partial output, and a file it replaces stays whole
    until the new one takes its place; a temporary left by a killed run is
    removed by the next run for the same output. A destination that cannot
    be written is refused before the model is loaded (E510, E514); a write
    that fails on the way (a full disk, a file size limit) stops the run
    with E513, and the temporary is removed.

    Under ``torchrun`` (WORLD_SIZE > 1; gloo on the CPU, NCCL with
    device="cuda", each process then on cuda:LOCAL_RANK) the length-sorted
    batches of a single run are dealt out in turn to the processes. Each
    writes its datasets to a temporary file beside `output_path` (so its
    folder must be one all the processes see), and process 0 copies them into
    the output, which is the single run's, bit for bit on the same device
    with the same threads. An error in one process stops all of them, with
    no output.
    """
    if layers not in LAYER_CHOICES:
        raise ConfigError("E201", found=layers)
    torch_device = check_device(str(device))
    dist = Distributed.from_env(str(device))
    if dist.enabled:
        torch_device = _process_device(dist, str(device), torch_device)
    output_path = _output_file(output_path, Path(input_path))
    _refuse_existing(output_path, overwrite)
    lines = input_lines(Path(input_path))
    sentences = [line.split() for line in lines]
    check_writable(output_path)
    model = BiLM.from_allennlp(options, weights).to(torch_device).eval()
    model.use_cuda_graphs(cuda_graphs)
    batches = length_sorted_batches([len(s) for s in sentences], batch_size)
    embed = _Embedder(model, sentences, layers, torch_device, precision)
    if dist.enabled:
        _embed_in_processes(dist, embed, batches, lines, output_path, overwrite)
        return
    _write_file(embed, batches, lines, output_path, overwrite)


def embed_lines(
    model: BiLM,
    lines: Sequence[str],
    output_path: PathLike,
    *,
    layers: str = "all",
    batch_size: int = 64,
    by_length: bool = True,
    names: Optional[Sequence[str]] = None,
    sentence_index: bool = True,
    overwrite: bool = False,
) -> None:
    """`embed_file` with a biLM already loaded, in this process, from lines
    already read: the same checks, output file and layout.

    by_length: batch the sentences by length (the fastest); False batches
        them in order, `batch_size` lines at a time, as a ``stateful`` biLM
        must see them to carry its state from one line to the line
        `batch_size` further on.
    names: each line's dataset name (default its number, "0", "1", ...).
    sentence_index: write the "sentence_to_index" dataset.
    """
    if layers not in LAYER_CHOICES:
        raise ConfigError("E201", found=layers)
    output_path = _output_file(output_path, Path("embeddings"))
    _refuse_existing(output_path, overwrite)
    check_writable(output_path)
    sentences = [line.split() for line in lines]
    if by_length:
        batches = length_sorted_batches([len(s) for s in sentences], batch_size)
    else:
        starts = range(0, len(lines), batch_size)
        batches = [list(range(start, min(start + batch_size, len(lines)))) for start in starts]
    embed = _Embedder(model, sentences, layers, model.boundary_ids.device, "fp32", names)
    _write_file(embed, batches, list(lines) if sentence_index else None, output_path, overwrite)


def _write_file(
    embed: "_Embedder", batches: Sequence[List[int]], lines: Optional[List[str]], output_path: Path, overwrite: bool
) -> None:
    """Write the embedded `batches` and, unless `lines` is None, their index
    to `output_path`, whole or not at all."""
    with exit_on_sigterm() as check_stop, atomic_path(output_path) as tmp:
        with hdf5_writer(tmp, output_path, check_stop) as (fout, check):
            embed(fout, batches, check_stop=check)
            check()
            if lines is not None:
                _write_index(fout, lines)
        _refuse_existing(output_path, overwrite)  # created by someone else while we ran


class _Embedder:
    """Writes the vectors of batches of `sentences` into an open HDF5 file."""

    def __init__(
        self,
        model: BiLM,
        sentences: List[List[str]],
        layers: str,
        device: torch.device,
        precision: str,
        names: Optional[Sequence[str]] = None,
    ):
        self.model = model
        self.sentences = sentences
        self.layers = layers
        self.device = device
        self.precision = precision
        self.names = [str(i) for i in range(len(sentences))] if names is None else names

    def __call__(
        self,
        fout: h5py.File,
        batches: Sequence[List[int]],
        rank: int = 0,
        world_size: int = 1,
        check_stop: Callable[[], None] = lambda: None,
    ) -> None:
        """Write the sentences of batches rank, rank + world_size, ...; `check_stop`
        (from `hdf5_writer`) is called before each of these batches is encoded
        and after each dataset.

        The token encoder gives a token the same vector whatever is encoded
        with it, so the other processes' batches need not pass through this
        one's token cache for the outputs to equal a single process's.
        """
        sentences = self.sentences
        mine = batches[rank::world_size]
        write = _DatasetWriter(fout)

        def encoded(rows: List[int]) -> torch.Tensor:
            check_stop()
            return self.model.encode_words([sentences[i] for i in rows]).float()

        # One copy to the host per batch; on a GPU while the next batch computes.
        with (
            torch.inference_mode(),
            in_precision(self.device, self.precision),
            tqdm(
                total=sum(len(rows) for rows in mine),
                unit="sentence",
                desc="embed",
                disable=rank != 0,
            ) as progress,
        ):
            for rows, layers in zip(mine, copied_to_host(encoded(rows) for rows in mine)):
                starts = numpy.cumsum([0] + [len(sentences[i]) for i in rows])
                token = first_token_not_finite(layers)
                if token is not None:
                    line = rows[int(numpy.searchsorted(starts, token, side="right")) - 1]
                    raise DivergedRunError("E535", what=f"line {line + 1} of the input (and maybe others)")
                vectors = self._chosen(layers)
                for k, i in enumerate(rows):
                    write(self.names[i], vectors[..., starts[k] : starts[k + 1], :])
                    check_stop()
                progress.update(len(rows))

    def _chosen(self, layers: numpy.ndarray) -> numpy.ndarray:
        """The vectors to write of a batch's layers (n_layers + 1, n_tokens, dim):
        all of them, the last layer, or their mean, (n_tokens, dim)."""
        if self.layers == "top":
            return layers[-1]
        if self.layers == "average":
            return torch.from_numpy(layers).mean(dim=0).numpy()
        return layers


class _DatasetWriter:
    """Adds float32 datasets to an open HDF5 file through h5py's low-level
    API, with the datatype and the creation property lists made once for all
    (`Group.create_dataset` makes them anew, and checks its many options, for
    every dataset: most of the cost of a short line).

    A dataset of at most `COMPACT_BYTES` is stored compact, inside its own
    header, so that writing it costs no write of its own to the file; a larger
    one is contiguous, as `create_dataset` stores it. Readers see no
    difference: the names, shapes, dtype and values are the same either way.
    Neither records times, as `create_dataset` records none.
    """

    COMPACT_BYTES = 16 * 1024  # well under HDF5's limit of 64 KiB on a header message

    def __init__(self, fout: h5py.File):
        self._group = fout.id
        self._type = h5t.py_create(numpy.dtype(numpy.float32), logical=True)
        self._contiguous = h5p.create(h5p.DATASET_CREATE)
        self._contiguous.set_obj_track_times(False)
        self._compact = self._contiguous.copy()
        self._compact.set_layout(h5d.COMPACT)

    def __call__(self, name: str, data: numpy.ndarray) -> None:
        data = numpy.ascontiguousarray(data, dtype=numpy.float32)
        plist = self._compact if data.nbytes <= self.COMPACT_BYTES else self._contiguous
        space = h5s.create_simple(data.shape)
        dataset = h5d.create(self._group, name.encode(), self._type, space, dcpl=plist)
        dataset.write(h5s.ALL, h5s.ALL, data, mtype=self._type)


def _write_index(fout: h5py.File, lines: List[str]) -> None:
    sentence_to_index: Dict[str, str] = {line.strip(): str(i) for i, line in enumerate(lines)}
    fout.create_dataset(SENTENCE_TO_INDEX, data=[json.dumps(sentence_to_index)], dtype=h5py.string_dtype())


def _process_device(dist: Distributed, name: str, device: torch.device) -> torch.device:
    """This process's device under torchrun: "cuda" means cuda:LOCAL_RANK; a
    numbered GPU would be shared by all processes (E602)."""
    if device.type == "cuda" and device.index is not None:
        raise InputError("E602", found=name, world_size=dist.world_size)
    return check_device(str(dist.device))


def _embed_in_processes(
    dist: Distributed,
    embed: _Embedder,
    batches: List[List[int]],
    lines: List[str],
    output_path: Path,
    overwrite: bool,
) -> None:
    """Process r embeds batches r, r + world_size, ... into its own temporary
    file; process 0 then copies every shard into the output, atomically.
    Longest batches first, dealt out in turn: the work is shared evenly."""

    def write_shard() -> None:
        with hdf5_writer(shard, output_path, check_stop) as (fout, check):
            embed(fout, batches, dist.rank, dist.world_size, check_stop=check)

    def merge() -> None:
        with atomic_path(output_path) as tmp:
            with hdf5_writer(tmp, output_path, check_stop) as (fout, check):
                write = _DatasetWriter(fout)
                for path in shards:
                    with h5py.File(path, "r") as fin:
                        for name, dataset in fin.items():
                            write(name, dataset[...])
                            check()
                _write_index(fout, lines)
            _refuse_existing(output_path, overwrite)  # created by someone else while we ran

    dist.start()
    try:
        with exit_on_sigterm() as check_stop, scratch_path(output_path) as shard:
            _together(dist, write_shard)
            shards = dist.gather(shard)
            _together(dist, merge if dist.is_main else lambda: None)  # the shards stay until merged
    except BaseException:
        dist.stop(clean=False)  # nothing to do after _together, which leaves the group itself
        raise
    dist.stop()


def _together(dist: Distributed, step: Callable[[], T]) -> T:
    """Run `step` in every process; when it raised in any, raise in all (the
    error itself where it happened, E601 elsewhere) after leaving the process
    group together, so that no process waits for a peer that has given up."""
    failure = None
    try:
        result = step()
    except Exception as err:
        failure = err
    reasons = dist.gather(None if failure is None else f"{type(failure).__name__}: {failure}")
    failed = [(rank, reason) for rank, reason in enumerate(reasons) if reason is not None]
    if not failed:
        return result
    dist.stop()
    if failure is not None:
        raise failure
    rank, reason = failed[0]
    raise ElmoError("E601", rank=rank, world_size=dist.world_size, reason=reason)


def _output_file(path: PathLike, input_path: Path) -> Path:
    """`path` as the file to create: a path that ends with "/" or names an
    existing folder is refused (E515), since embed writes one file."""
    text = os.fspath(path)
    folder = Path(text)
    if text.endswith(("/", os.sep)) or folder.is_dir():
        why = "it ends with '/'" if text.endswith(("/", os.sep)) else "a folder of that name exists"
        example = folder / f"{input_path.stem or 'embeddings'}.hdf5"
        raise OutputError("E515", path=text, why=why, example=example)
    return Path(text)


def _refuse_existing(path: Path, overwrite: bool) -> None:
    """E202 for an existing `path`, unless `overwrite` and it is a file."""
    if path.exists() and not (overwrite and path.is_file()):
        raise OutputError("E202", path=path, extra=OVERWRITE_HINT)


def input_lines(source: Union[PathLike, IO]) -> List[str]:
    """The lines of a UTF-8 text file, split as every reader splits them
    (`split_lines`: at \\n, \\r\\n or a lone \\r), without line ends and
    without a byte-order mark. source: a path, or a file open for reading, in
    text or binary mode, read from where it stands to its end (and left open)."""
    name = getattr(source, "name", "the input") if hasattr(source, "read") else source
    try:
        with _binary(source) as fin:
            lines = [raw.decode("utf-8").rstrip("\r\n") for raw in split_lines(fin)]
    except (OSError, UnicodeError) as err:
        raise InputError("E203", path=name, reason=err) from err
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return lines


def _binary(source: Union[PathLike, IO]) -> ContextManager[BinaryIO]:
    """`source` to read as bytes: a path opened, or an open file's remaining
    content (text encoded as UTF-8)."""
    if not hasattr(source, "read"):
        return Path(source).open("rb")
    data = source.read()
    return nullcontext(io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data))
