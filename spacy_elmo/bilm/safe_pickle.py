"""Reading a PyTorch state dict (``torch.save(module.state_dict())``) without
running a general unpickler.

A pickle is a program: unpickled by `pickle` or ``torch.load``, a file can
import and call anything. `read_state_dict` unpickles with an allow-list
(`_StateDictUnpickler.find_class`): the only names a file may use are an
ordered dict and the functions that rebuild a tensor, and those resolve to
this module's own stand-ins, which record what the file asks for; tensors are
made from the raw storage bytes only after the whole pickle has been read and
found to be a dict of tensors. Both of torch's formats are read: the zip
archive (torch >= 1.6) and the legacy stream (magic number, protocol, system
info, the pickle, its storage keys, then each storage's bytes), in which
ELMoForManyLangs' models were saved. Anything else is refused (E901).
"""

import io
import math
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, List, NamedTuple, Optional, Tuple, Union

import torch

from ..errors import DamagedFileError

# torch's zip format starts as every zip archive does; its legacy stream with these two pickled numbers.
ZIP_MAGIC = b"PK\x03\x04"
LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001

# The storage classes a state dict's tensors name, by their name in module `torch`.
STORAGE_DTYPES = {
    "FloatStorage": torch.float32,
    "DoubleStorage": torch.float64,
    "HalfStorage": torch.float16,
    "BFloat16Storage": torch.bfloat16,
    "LongStorage": torch.int64,
    "IntStorage": torch.int32,
    "ShortStorage": torch.int16,
    "CharStorage": torch.int8,
    "ByteStorage": torch.uint8,
    "BoolStorage": torch.bool,
}
# The functions that rebuild a tensor from a storage: (storage, offset, size, stride, ...).
TENSOR_REBUILDERS = ("_rebuild_tensor", "_rebuild_tensor_v2")


class _StorageType(NamedTuple):
    """What the file's ``torch.<name>Storage`` resolves to."""

    dtype: torch.dtype


class _Storage:
    """A storage the pickle names: its dtype, its number of elements, and its
    bytes once they are read."""

    def __init__(self, dtype: torch.dtype, numel: int):
        self.dtype, self.numel = dtype, numel
        self.data: Optional[torch.Tensor] = None  # (nbytes,) uint8

    @property
    def nbytes(self) -> int:
        return self.numel * torch.empty((), dtype=self.dtype).element_size()

    def read_from(self, file: BinaryIO) -> None:
        """Read the storage's bytes from `file` into memory of its own (aligned
        for its dtype), with no other copy; `_Refused` where the file ends first."""
        self.data = torch.empty(self.nbytes, dtype=torch.uint8)
        if self.nbytes and file.readinto(self.data.numpy()) != self.nbytes:
            raise _Refused(f"a storage of {self.numel} elements without its {self.nbytes} bytes")


class _TensorRef(NamedTuple):
    """A tensor the pickle asks for, made once its storage's bytes are read."""

    storage: _Storage
    offset: int
    size: Tuple[int, ...]
    stride: Tuple[int, ...]


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any) -> _TensorRef:
    """The stand-in for torch's `_rebuild_tensor(_v2)`: a record of the view,
    checked to stay inside its storage."""
    if not (isinstance(storage, _Storage) and _is_int(offset) and _ints(size) and _ints(stride)):
        raise _Refused("a tensor rebuilt from arguments other than a storage, an offset, a size and a stride")
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or offset < 0 or min(size + stride, default=0) < 0:
        raise _Refused(f"a tensor of size {size}, stride {stride} and offset {offset}")
    if all(size) and offset + sum((n - 1) * s for n, s in zip(size, stride)) >= storage.numel:
        raise _Refused(f"a tensor of size {size} reaching past its storage of {storage.numel} elements")
    if math.prod(size) > storage.numel:  # elements repeated (a stride of 0): its copy could fill any memory
        raise _Refused(f"a tensor of size {size} over a storage of {storage.numel} elements")
    return _TensorRef(storage, offset, size, stride)


class _Refused(Exception):
    """What in the pickle is not part of a state dict of tensors."""


def _is_int(value: Any) -> bool:
    return type(value) is int


def _ints(values: Any) -> bool:
    return isinstance(values, (tuple, list)) and all(map(_is_int, values))


# Every global a state dict's pickle may name, and what it resolves to.
_ALLOWED: Dict[Tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    **{("torch._utils", name): _rebuild_tensor for name in TENSOR_REBUILDERS},
    **{("torch", name): _StorageType(dtype) for name, dtype in STORAGE_DTYPES.items()},
}


class _StateDictUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the names in `_ALLOWED`, and storages
    (persistent ids) through `load_storage`."""

    def __init__(self, file: BinaryIO, load_storage: Callable[[tuple], _Storage]):
        super().__init__(file)
        self._load_storage = load_storage

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise _Refused(f"the name '{module}.{name}'")
        return _ALLOWED[module, name]

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] in ("storage", b"storage")):
            raise _Refused(f"the persistent id {pid!r:.80}")
        return self._load_storage(pid[1:])


def read_state_dict(path: Union[str, Path]) -> "OrderedDict[str, torch.Tensor]":
    """The tensors of a file ``torch.save`` wrote from a state dict, by name,
    in the file's order, on the CPU. E901 for a file that holds anything but a
    dict of tensors (a pickle naming another class or function, a module, a
    tensor outside its storage), E001 for one that cannot be read."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            is_zip = file.read(len(ZIP_MAGIC)) == ZIP_MAGIC
        if is_zip:
            return _checked(*_read_zip(path))
        with open(path, "rb") as stream:
            return _checked(*_read_legacy(stream, path.stat().st_size))
    except _Refused as err:
        raise DamagedFileError("E901", path=path, found=err) from None
    except (Exception, RecursionError) as err:  # whatever a damaged pickle or archive makes the reader raise
        raise DamagedFileError("E001", kind="weights", path=path, reason=f"{type(err).__name__}: {err}") from err


def _checked(result: Any, storages: List[_Storage]) -> "OrderedDict[str, torch.Tensor]":
    """`result` as a state dict of tensors once every storage has its bytes;
    `_Refused` unless it is a dict of str to tensors."""
    if not isinstance(result, dict):
        raise _Refused(f"a pickle of {type(result).__name__}, not a dict of tensors")
    for key, value in result.items():
        if not isinstance(key, str) or not isinstance(value, _TensorRef):
            raise _Refused(f"the entry {key!r:.80} of type {type(value).__name__}, not a tensor")
    for storage in storages:
        if storage.data is None:
            raise _Refused(f"a storage of {storage.numel} elements without its {storage.nbytes} bytes")
    flat = {id(storage): _flat(storage) for storage in storages}
    return OrderedDict((key, _tensor(ref, flat[id(ref.storage)])) for key, ref in result.items())


def _flat(storage: _Storage) -> torch.Tensor:
    """A storage's values as a 1-d tensor of its dtype, sharing its bytes' memory."""
    return storage.data.view(storage.dtype) if storage.numel else torch.empty(0, dtype=storage.dtype)


def _tensor(ref: _TensorRef, flat: torch.Tensor) -> torch.Tensor:
    """The tensor `ref` describes from its storage's values `flat`: the
    storage itself where the tensor is all of it, in order (a state dict's
    usual case), else a contiguous copy of its view."""
    if not all(ref.size):
        return torch.empty(ref.size, dtype=flat.dtype)
    view = flat.as_strided(ref.size, ref.stride, ref.offset)
    return view if view.is_contiguous() and view.numel() == flat.numel() else view.clone()


def _storage_loader(make: Callable[[torch.dtype, Any, int], _Storage]) -> Callable[[tuple], _Storage]:
    """A persistent-id handler: ``(storage_type, key, location, numel, ...)``
    to the one `_Storage` per key, made by ``make(dtype, key, numel)``."""
    storages: Dict[Any, _Storage] = {}

    def load(fields: tuple) -> _Storage:
        if len(fields) < 4 or not isinstance(fields[0], _StorageType) or not _is_int(fields[3]) or fields[3] < 0:
            raise _Refused(f"the storage id {fields!r:.80}")
        if len(fields) > 4 and fields[4] is not None:
            raise _Refused("a view of a storage")
        dtype, key, numel = fields[0].dtype, fields[1], fields[3]
        if key not in storages:
            storages[key] = make(dtype, key, numel)
        if storages[key].dtype != dtype or storages[key].numel != numel:
            raise _Refused(f"the storage {key!r} named with two types or sizes")
        return storages[key]

    load.storages = storages  # type: ignore[attr-defined]
    return load


def _read_zip(path: Path) -> Tuple[Any, List[_Storage]]:
    """The zip format: ``<name>/data.pkl`` and each storage in ``<name>/data/<key>``."""
    with zipfile.ZipFile(path) as archive:
        pickles = [name for name in archive.namelist() if name.endswith("/data.pkl") and name.count("/") == 1]
        if len(pickles) != 1:
            raise _Refused(f"a zip archive with {len(pickles)} 'data.pkl' records, not one")
        prefix = pickles[0][: -len("data.pkl")]
        byteorder = prefix + "byteorder"
        if byteorder in archive.namelist() and archive.read(byteorder) != b"little":
            raise _Refused("tensors stored big-endian")

        def make(dtype: torch.dtype, key: Any, numel: int) -> _Storage:
            storage = _Storage(dtype, numel)
            name = f"{prefix}data/{key}"
            if not isinstance(key, str) or name not in archive.namelist():
                raise _Refused(f"the storage {key!r:.80}, which the archive does not hold")
            if archive.getinfo(name).file_size != storage.nbytes:
                stored = archive.getinfo(name).file_size
                raise _Refused(f"the storage {key!r} of {storage.nbytes} bytes stored as {stored}")
            with archive.open(name) as record:
                storage.read_from(record)
            return storage

        load = _storage_loader(make)
        result = _StateDictUnpickler(io.BytesIO(archive.read(pickles[0])), load).load()
        return result, list(load.storages.values())  # type: ignore[attr-defined]


def _read_legacy(stream: BinaryIO, size: int) -> Tuple[Any, List[_Storage]]:
    """The legacy stream, from `stream` (a file of `size` bytes): magic
    number, protocol version and system info (each a pickle), the state
    dict's pickle, the list of storage keys, then for each key its number of
    elements (int64) and its bytes."""

    def plain_pickle() -> Any:
        return _StateDictUnpickler(stream, _refuse_storage).load()

    if plain_pickle() != LEGACY_MAGIC_NUMBER:
        raise _Refused("a file that is neither a zip archive nor torch's legacy stream (no magic number)")
    if plain_pickle() != LEGACY_PROTOCOL_VERSION:
        raise _Refused("a legacy stream of another protocol version")
    info = plain_pickle()
    if not isinstance(info, dict) or not info.get("little_endian", False):
        raise _Refused("tensors stored big-endian, or no system information")
    load = _storage_loader(lambda dtype, key, numel: _Storage(dtype, numel))
    result = _StateDictUnpickler(stream, load).load()
    keys = plain_pickle()
    storages: Dict[Any, _Storage] = load.storages  # type: ignore[attr-defined]
    if not isinstance(keys, list) or sorted(map(str, keys)) != sorted(map(str, storages)):
        raise _Refused("a list of storage keys that does not match the storages the pickle names")
    for key in keys:
        storage = storages[key]
        numel = int.from_bytes(stream.read(8), "little", signed=True)
        if numel != storage.numel or storage.nbytes > size - stream.tell():
            raise _Refused(f"the storage {key!r} of {storage.numel} elements stored as {numel}")
        storage.read_from(stream)
    return result, list(storages.values())


def _refuse_storage(fields: tuple) -> _Storage:
    raise _Refused("a storage outside the state dict's pickle")
