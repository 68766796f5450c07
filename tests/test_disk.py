"""One guard for every writer (spacy_elmo.disk): a full disk, a file-size limit
or a read-only folder is a coded error naming the file, never a bare OSError
or a crash of HDF5, and no temporary file is left behind.

The writes that fail run in a child process under a file-size limit (``ulimit
-f``; Python ignores SIGXFSZ, so a write past it fails with EFBIG as one to a
full disk fails with ENOSPC): an HDF5 crash there is a signal, not a lost test run.
"""

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from spacy_elmo.bilm import BiLM
from spacy_elmo.disk import hdf5_writer, writing
from spacy_elmo.errors import ElmoError

from .disk_helpers import ROOT, check_coded, leftovers, read_only_folder


def run_limited(script: str, *args, limit: int) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter whose files may not grow past `limit` bytes."""

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_file_size,
        env=env,
    )


REPORT = (
    "import sys\n"
    "from spacy_elmo.errors import ElmoError\n"
    "def report(run):\n"
    "    try:\n"
    "        run()\n"
    "    except ElmoError as err:\n"
    "        print(err)\n"
    "        sys.exit(1)\n"
)


def test_save_allennlp_on_a_full_disk_is_a_coded_error(fixture_paths, tmp_path):
    out = tmp_path / "out"
    script = REPORT + (
        "from spacy_elmo.bilm import BiLM\n"
        "bilm = BiLM.from_allennlp(sys.argv[1], sys.argv[2])\n"
        "report(lambda: bilm.save_allennlp(sys.argv[3]))\n"
    )
    result = run_limited(script, *fixture_paths, out, limit=64 * 1024)  # the weights are about 450 KB
    check_coded(result, "E513", "weights.hdf5")
    assert "File too large" in result.stdout
    assert leftovers(out) == []


def test_softmax_save_on_a_full_disk_is_a_coded_error(tmp_path):
    script = REPORT + (
        "from spacy_elmo.training import SoftmaxHead\n"
        "head = SoftmaxHead(in_dim=64, n_classes=2000, kind='full', div_value=4.0)\n"  # 2000 x 64 float32: 512 KB
        "report(lambda: head.save(sys.argv[1]))\n"
    )
    result = run_limited(script, tmp_path / "softmax.hdf5", limit=64 * 1024)
    check_coded(result, "E513", "softmax.hdf5")
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["chmod", "sysfs"])
def test_save_allennlp_into_a_read_only_folder_is_a_coded_error(fixture_paths, tmp_path, how):
    folder = read_only_folder(tmp_path, how)
    with pytest.raises(ElmoError, match=rf"E514.*'{folder}/out"):
        BiLM.from_allennlp(*fixture_paths).save_allennlp(folder / "out")


def test_the_guard_names_the_file_for_no_room_and_no_permission(tmp_path):
    import errno

    with pytest.raises(ElmoError, match=r"E513.*'.*x\.bin'.*No space left"):
        with writing(tmp_path / "x.bin"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with pytest.raises(ElmoError, match=r"E525.*'.*x\.bin'.*File too large"):
        with writing(tmp_path / "x.bin", code="E525"):
            raise RuntimeError("... errno = 27, error message = 'File too large'")
    with pytest.raises(ElmoError, match=rf"E514.*'.*x\.bin'.*Read-only file system.*'{tmp_path}'"):
        with writing(tmp_path / "x.bin"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    with pytest.raises(OSError, match="Input/output"):  # not a write that found no room: as it was
        with writing(tmp_path / "x.bin"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_an_hdf5_write_to_a_full_device_is_a_coded_error(tmp_path):
    # /dev/full fails every write with ENOSPC, as a full disk does.
    with pytest.raises(ElmoError, match=r"E513.*out\.hdf5.*No space left on device"):
        with hdf5_writer(Path("/dev/full"), tmp_path / "out.hdf5") as (fout, check):
            for i in range(100):
                fout.create_dataset(str(i), data=numpy.ones((3, 100, 32), dtype="float32"))
                check()
