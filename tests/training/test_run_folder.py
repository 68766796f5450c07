"""One run per folder at a time, and a failed start that costs nothing."""
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from spacy_elmo.errors import ElmoError
from spacy_elmo.training import pretrain
from spacy_elmo.training.run.run_dir import HOLDER_NAME, RunDir

HOLD_LOCK = """
import sys, time
from spacy_elmo.training.run.run_dir import RunDir
with RunDir(sys.argv[1]).lock():
    print("holding", flush=True)
    time.sleep(600)
"""


def test_a_second_process_on_the_same_folder_is_refused(tmp_path, tiny_config):
    run = tmp_path / "run"
    pretrain(tiny_config(training={"max_steps": 2}), run, progress=False)
    weights = (run / "model" / "weights.hdf5").read_bytes()
    with RunDir(run).lock():  # as another process would hold it (flock: one holder per open file)
        holder = json.loads((run / HOLDER_NAME).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        with pytest.raises(ElmoError, match=rf"E503.*pid {os.getpid()} on {socket.gethostname()}, running since"):
            pretrain(tiny_config(training={"max_steps": 4}), run, resume=True, progress=False)
    assert (run / "model" / "weights.hdf5").read_bytes() == weights
    assert not (run / HOLDER_NAME).exists()  # the holder's name goes with its lock
    # Released at the end of the block: the run continues.
    assert pretrain(tiny_config(training={"max_steps": 4}), run, resume=True, progress=False).state.step == 4


@pytest.mark.slow
def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(ElmoError, match=rf"E503.*pid {holder.pid} on"):
            with RunDir(run).lock():
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert json.loads((run / HOLDER_NAME).read_text())["pid"] == holder.pid  # left behind by kill -9
    assert RunDir(run)._entries() == []  # the lock's files make no run: a new one may start here
    with RunDir(run).lock():  # the kernel released it with the process
        assert json.loads((run / HOLDER_NAME).read_text())["pid"] == os.getpid()


def test_a_missing_text_claims_no_folder(tmp_path, tiny_config):
    run = tmp_path / "run"
    with pytest.raises(ElmoError, match=r"E301.*nope\.txt"):
        pretrain(tiny_config(paths={"train": str(tmp_path / "nope.txt")}), run, progress=False)
    with pytest.raises(ElmoError, match=r"E301.*nodev\.txt"):
        pretrain(tiny_config(paths={"dev": str(tmp_path / "nodev.txt")}), run, progress=False)
    assert not run.exists()


@pytest.mark.parametrize("resume", [False, True])
def test_a_run_that_failed_before_its_first_checkpoint_starts_again(tmp_path, tiny_config, resume):
    run = tmp_path / "run"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    with pytest.raises(ElmoError, match="E311"):
        pretrain(tiny_config(paths={"train": str(empty)}), run, progress=False)
    assert (run / "config.cfg").exists()  # claimed: the text was only found empty once read
    # The fixed command takes the folder over, with or without --resume (no E307, no E308).
    result = pretrain(tiny_config(training={"max_steps": 2}), run, resume=resume, progress=False)
    assert result.state.step == 2 and (run / "model" / "weights.hdf5").exists()
    # Once it has a checkpoint, the folder is protected again.
    with pytest.raises(ElmoError, match="E307"):
        pretrain(tiny_config(training={"max_steps": 2}), run, progress=False)


def test_an_empty_dev_text_is_an_error_not_nan(tmp_path, tiny_config):
    blank = tmp_path / "blank.txt"
    blank.write_bytes(b"\n   \n\xff\xfe\n")
    with pytest.raises(ElmoError, match=r"E505.*blank\.txt"):
        pretrain(tiny_config(paths={"dev": str(blank)}), tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "model").exists()


def test_a_diverged_run_is_not_exported(tmp_path, tiny_config):
    run = tmp_path / "run"
    settings = {"max_steps": 2, "grad_clip": 0.0, "optimizer": {"learn_rate": 1000.0}}
    with pytest.raises(ElmoError, match=r"E506.*not finite"):
        pretrain(tiny_config(training=settings), run, progress=False)
    assert not (run / "model").exists()


def test_an_update_that_leaves_weights_not_finite_is_not_exported(tmp_path, tiny_config):
    def infinite_gradient(state, lm):
        if state.step == 2:  # the next, last step's loss is finite but its gradient is not
            lm.softmax.linear.weight.register_hook(lambda grad: grad * float("inf"))

    run = tmp_path / "run"
    settings = {"max_steps": 3, "grad_clip": 0.0, "checkpoint_every": 4}
    with pytest.raises(ElmoError, match=r"E512.*step 3.*softmax\.linear\.weight.*No checkpoint"):
        pretrain(tiny_config(training=settings, paths={"dev": None}), run, progress=False, on_step=infinite_gradient)
    assert not (run / "model").exists()


def test_an_output_folder_under_a_file_and_a_bad_device(tmp_path, tiny_config):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ElmoError, match=r"E510.*'.*file' is a file"):
        pretrain(tiny_config(), tmp_path / "file" / "run", progress=False)
    for device in ("potato", "cuda:99"):
        with pytest.raises(ElmoError, match=rf"E509.*'{device}'"):
            pretrain(tiny_config(), tmp_path / "run", device=device, progress=False)
    assert not (tmp_path / "run").exists()
