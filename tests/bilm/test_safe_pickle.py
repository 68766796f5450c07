"""The state-dict reader: what torch.save writes comes back, and nothing but a
dict of tensors is accepted, without running what a file carries."""

import os
import pickle
import re
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

import spacy_elmo
from spacy_elmo.bilm.safe_pickle import read_state_dict
from spacy_elmo.errors import DamagedFileError

FORMATS = {"zip": True, "legacy": False}


def _save(obj, path: Path, fmt: str) -> Path:
    torch.save(obj, path, _use_new_zipfile_serialization=FORMATS[fmt])
    return path


@pytest.fixture(params=list(FORMATS))
def fmt(request) -> str:
    return request.param


def test_a_state_dict_comes_back_whole(tmp_path, fmt):
    generator = torch.Generator().manual_seed(0)
    base = torch.randn(4, 6, generator=generator)
    state = OrderedDict(
        [
            ("b.weight", base),
            ("a.transposed", base.t()),  # a view sharing the storage, other strides
            ("a.row", base[2]),  # an offset into it
            ("ids", torch.arange(5)),
            ("half", torch.randn(3, generator=generator).half()),
            ("empty", torch.zeros(0, 3)),
        ]
    )
    loaded = read_state_dict(_save(state, tmp_path / "state.pkl", fmt))
    assert list(loaded) == list(state)
    for name, tensor in state.items():
        assert loaded[name].dtype == tensor.dtype and torch.equal(loaded[name], tensor), name


def test_a_modules_state_dict_with_its_metadata_loads(tmp_path, fmt):
    module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    loaded = read_state_dict(_save(module.state_dict(), tmp_path / "state.pkl", fmt))
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    fresh.load_state_dict(loaded)
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), module.state_dict().values()))


class _WritesMarker:
    """Unpickled by a general unpickler, this would run a shell command."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch '{self.marker}'",)


@pytest.mark.parametrize("where", ["a value", "the top"])
def test_a_pickle_that_would_run_a_command_is_refused_without_running_it(tmp_path, fmt, where):
    marker = tmp_path / "marker"
    payload = _WritesMarker(marker)
    obj = {"weight": torch.ones(2), "evil": payload} if where == "a value" else payload
    path = _save(obj, tmp_path / "evil.pkl", fmt)
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(path)
    assert err.value.code == "E901" and re.search(r"'(posix|nt|os)\.system'", str(err.value))
    assert not marker.exists()
    # The same file does run the command when unpickled in general: the test can fail.
    if fmt == "legacy":
        torch.load(path, weights_only=False)
        assert marker.exists()


def test_a_plain_pickle_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps(_WritesMarker(marker)))
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(path)
    assert err.value.code == "E901"
    assert not marker.exists()


@pytest.mark.parametrize(
    "obj, found",
    [
        (torch.nn.Linear(2, 2), "torch.nn.modules.linear.Linear"),
        ({"weight": torch.ones(2), "step": 3}, "'step' of type int"),
        ([torch.ones(2)], "a pickle of list"),
        ({1: torch.ones(2)}, "the entry 1"),
    ],
)
def test_anything_but_a_dict_of_tensors_is_refused(tmp_path, fmt, obj, found):
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(_save(obj, tmp_path / "other.pkl", fmt))
    assert err.value.code == "E901" and found in str(err.value)


def test_a_tensor_reaching_past_its_storage_is_refused(tmp_path):
    path = _save({"w": torch.arange(6.0).view(2, 3)}, tmp_path / "state.pkl", "legacy")
    raw = path.read_bytes()
    # Protocol 2 pickles the size (2, 3) as BININT1 2, BININT1 3, TUPLE2; make it (2, 30).
    patched = raw.replace(b"K\x02K\x03\x86", b"K\x02K\x1e\x86", 1)
    assert patched != raw
    path.write_bytes(patched)
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(path)
    assert err.value.code == "E901" and "reaching past its storage" in str(err.value)


def test_a_truncated_file_is_a_coded_error(tmp_path, fmt):
    path = _save({"w": torch.ones(100)}, tmp_path / "state.pkl", fmt)
    path.write_bytes(path.read_bytes()[:-60])
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(path)
    assert err.value.code in ("E001", "E901")


# What runs a general unpickler: pickle's and torch's loaders (torch.load only
# with weights_only=True passes), and any Unpickler, outside the reader itself.
_GENERAL_UNPICKLING = re.compile(r"\bpickle\.loads?\(|\bUnpickler\b|\btorch\.load\((?![^)]*weights_only=True)")


def test_no_module_of_the_package_unpickles_in_general():
    package = Path(spacy_elmo.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "safe_pickle.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
            if _GENERAL_UNPICKLING.search(line):
                found.append(f"{path.relative_to(package)}:{number}: {line.strip()}")
    assert not found


def test_the_scan_sees_general_unpickling():
    for line in (
        "state = torch.load(path)",
        "torch.load(f, map_location='cpu')",
        "pickle.load(f)",
        "class U(pickle.Unpickler):",
    ):
        assert _GENERAL_UNPICKLING.search(line), line
    assert not _GENERAL_UNPICKLING.search("torch.load(f, map_location='cpu', weights_only=True)")


def test_a_tensor_repeating_its_storage_is_refused(tmp_path):
    # A stride of 0 makes a view of any size over one element: copying it could fill any memory.
    path = _save({"w": torch.ones(1).expand(3)}, tmp_path / "state.pkl", "legacy")
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(path)
    assert err.value.code == "E901" and "over a storage of 1 elements" in str(err.value)


def test_a_pickle_building_a_storage_type_is_a_coded_error(tmp_path):
    # BUILD on what `torch.FloatStorage` resolves to: nothing to set, and no bare traceback.
    path = tmp_path / "build.pkl"
    path.write_bytes(b"\x80\x02ctorch\nFloatStorage\n}q\x00X\x01\x00\x00\x00aK\x01sb.")
    with pytest.raises(DamagedFileError) as err:
        read_state_dict(path)
    assert err.value.code in ("E001", "E901")
