"""`export`: a run's last checkpoint as a model folder, written while the run is
stopped or training, without touching the run."""
import hashlib
import json
import os
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.cli import app
from spacy_elmo.errors import ElmoError
from spacy_elmo.training import load_model, perplexity, pretrain
from spacy_elmo.training.snapshot import export_checkpoint

from ..disk_helpers import ROOT, check_coded, leftovers, read_only_folder
from .conftest import Stop, stop_at

SENTENCES = [["the", "cat", "sat", "."], ["a", "zebra"], ["the"]]


def layers(bilm):
    with torch.no_grad():
        return bilm.eval()(batch_to_ids(SENTENCES)).layers


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def stopped_run(tmp_path, tiny_config):
    """A run killed after step 10: its checkpoint is step 8's (written every 4), its dev score step 6's."""
    config = tiny_config(training={"max_steps": 12, "checkpoint_every": 4, "eval_every": 6})
    run = tmp_path / "run"
    with pytest.raises(Stop):
        pretrain(config, run, progress=False, on_step=stop_at(10))
    return config, run


def test_the_export_of_a_finished_run_s_checkpoint_is_its_model(tmp_path, tiny_config):
    config = tiny_config(training={"max_steps": 12, "checkpoint_every": 4, "eval_every": 6})
    run = tmp_path / "run"
    pretrain(config, run, progress=False)
    info = export_checkpoint(run, tmp_path / "snapshot")
    torch.testing.assert_close(layers(BiLM.from_allennlp(tmp_path / "snapshot")),
                               layers(BiLM.from_allennlp(run / "model")), rtol=0, atol=0)
    own = json.loads((run / "model" / "pretrain.json").read_text())
    written = json.loads((tmp_path / "snapshot" / "pretrain.json").read_text())
    assert written == info | {"weights_dtype": "float32"}
    assert written.pop("checkpoint_of") == str(run)
    assert written == own  # the same step, tokens, perplexities and settings
    assert (tmp_path / "snapshot" / "vocab.txt").read_bytes() == (run / "model" / "vocab.txt").read_bytes()
    dev = tmp_path / "dev.txt"
    assert perplexity(tmp_path / "snapshot", dev).perplexity == perplexity(run / "model", dev).perplexity


def test_a_stopped_run_exports_its_last_checkpoint_and_is_left_as_it_was(tmp_path, stopped_run):
    config, run = stopped_run
    before = digests(run)
    info = export_checkpoint(run, tmp_path / "at_8", dtype="float16")
    assert digests(run) == before
    assert info["steps"] == 8
    assert info["dev"] is None  # the run evaluated at step 6, not 8
    assert info["train_perplexity"] is not None  # logged at step 8
    lm, vocab, _ = load_model(tmp_path / "at_8")
    saved = torch.load(run / "checkpoint.pt", weights_only=True)["model"]
    for name, value in lm.state_dict().items():
        torch.testing.assert_close(value, saved[name].half().float(), rtol=0, atol=0, msg=name)
    assert json.loads((tmp_path / "at_8" / "pretrain.json").read_text())["weights_dtype"] == "float16"

    # The run goes on as if nothing happened: from step 8 to the end, as a run never stopped.
    result = pretrain(config, run, resume=True, progress=False)
    assert result.state.step == 12


def test_the_dev_perplexity_logged_at_the_checkpoint_s_step_goes_with_it(tmp_path, tiny_config):
    config = tiny_config(training={"max_steps": 12, "checkpoint_every": 4, "eval_every": 4})
    run = tmp_path / "run"
    with pytest.raises(Stop):
        pretrain(config, run, progress=False, on_step=stop_at(10))
    info = export_checkpoint(run, tmp_path / "at_8")
    logged = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    at_8 = next(r for r in logged if r["kind"] == "dev" and r["step"] == 8)
    assert info["dev"] == {"forward": at_8["ppl_forward"], "backward": at_8["ppl_backward"], "mean": at_8["ppl"],
                           "tokens": at_8["dev_tokens"]}
    assert info["dev"]["mean"] == pytest.approx(perplexity(tmp_path / "at_8", tmp_path / "dev.txt").perplexity.mean,
                                                rel=1e-5)


def test_an_existing_output_is_never_written(tmp_path, stopped_run):
    _, run = stopped_run
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(ElmoError) as err:
        export_checkpoint(run, taken)
    assert err.value.code == "E534" and "a folder with files in it" in str(err.value)
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ElmoError, match=r"E534.*\(a file\)"):
        export_checkpoint(run, tmp_path / "file")
    assert (tmp_path / "file").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    export_checkpoint(run, tmp_path / "empty")  # an empty folder is new enough
    assert (tmp_path / "empty" / "weights.hdf5").exists()


def test_a_folder_without_a_run_or_a_checkpoint_is_refused(tmp_path, tiny_config):
    with pytest.raises(ElmoError, match="E533.*no config.cfg"):
        export_checkpoint(tmp_path, tmp_path / "out")
    run = tmp_path / "run"
    with pytest.raises(Stop):  # before the first checkpoint (step 4)
        pretrain(tiny_config(), run, progress=False, on_step=stop_at(2))
    with pytest.raises(ElmoError, match="E533.*no checkpoint.pt yet"):
        export_checkpoint(run, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_vocabulary_changed_beside_the_checkpoint_is_found_out(tmp_path, stopped_run):
    _, run = stopped_run
    lines = (run / "vocab.txt").read_text().splitlines()
    (run / "vocab.txt").write_text("\n".join(lines[:3] + lines[4:] + lines[3:4]) + "\n")
    with pytest.raises(ElmoError) as err:
        export_checkpoint(run, tmp_path / "out")
    assert err.value.code == "E317" and "vocab" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_the_command_exports_and_says_what_it_wrote(tmp_path, stopped_run):
    _, run = stopped_run
    result = CliRunner().invoke(app, ["export", str(run), str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "Exported step 8" in result.output
    assert (tmp_path / "out" / "weights.hdf5").exists()
    again = CliRunner().invoke(app, ["export", str(run), str(tmp_path / "out")])
    assert again.exit_code == 1 and "E534" in again.output
    bad = CliRunner().invoke(app, ["export", str(run), str(tmp_path / "out16"), "--dtype", "int8"])
    assert bad.exit_code == 1 and "E532" in bad.output
    assert not (tmp_path / "out16").exists()


def test_export_onto_a_tiny_disk_is_a_coded_error_and_leaves_nothing(tmp_path, stopped_run):
    _, run = stopped_run
    out = tmp_path / "out"
    out.mkdir()
    command = f"ulimit -f 16; exec {sys.executable} -m spacy_elmo export {run} {out / 'model'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=300)
    check_coded(result, "E513", str(out / "model"))
    assert leftovers(out) == []


@pytest.mark.parametrize("how", ["chmod", "sysfs"])
def test_export_into_a_read_only_folder_is_refused_before_anything_is_read(tmp_path, stopped_run, how):
    _, run = stopped_run
    folder = read_only_folder(tmp_path, how)
    with pytest.raises(ElmoError, match=rf"E514.*'{folder}/model'.*make '{folder}' writable"):
        export_checkpoint(run, folder / "model")
    result = CliRunner().invoke(app, ["export", str(run), str(folder / "model")])
    assert result.exit_code == 1 and "E514" in result.output and "Traceback" not in result.output
    assert not (folder / "model").exists()
