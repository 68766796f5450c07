"""Where a run or an export writes: a prepared corpus folder over the user's
text, a model folder that is a link or the current folder, a checkpoint that
is a folder, and a second run racing the first. Each is refused with a coded
error before anything is written, and nothing of the user's is removed."""
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from filelock import FileLock
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.errors import DamagedFileError, InputError, OutputError
from spacy_elmo.training import PretrainConfig, pretrain
from spacy_elmo.training.data.prepared import FORMAT_NAME, prepare_corpus
from spacy_elmo.training.data.tokenizers import WHITESPACE
from spacy_elmo.training.run.run_dir import LOCK_NAME, RunDir
from spacy_elmo.training.snapshot import export_checkpoint

from .conftest import tiny_settings, write_corpus


def tree(folder: Path) -> dict:
    """Every file under `folder` and its bytes (links not followed)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def export_cli(*args):
    return CliRunner().invoke(app, ["export", *map(str, args)])


def tiny(text: Path, steps: int) -> PretrainConfig:
    return PretrainConfig.from_dict(tiny_settings(text, training={"max_steps": steps}))


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A run stopped at its checkpoint of step 4, with its export, and its text."""
    path = tmp_path_factory.mktemp("stopped")
    text = write_corpus(path / "train.txt", 100)
    threads = torch.get_num_threads()
    pretrain(tiny(text, 4), path / "run", progress=False)
    torch.set_num_threads(threads)
    return path / "run", text


@pytest.fixture
def run_copy(tmp_path, stopped_run):
    run, text = stopped_run
    return shutil.copytree(run, tmp_path / "run", symlinks=True), text


def resume(run: Path, text: Path):
    return pretrain(tiny(text, 6), run, resume=True, progress=False)


# A prepared corpus folder over the user's text


def test_a_prepared_dir_that_holds_the_text_is_refused_and_the_text_kept(tmp_path, tiny_config):
    data = tmp_path / "data"
    (data / "train").mkdir(parents=True)
    write_corpus(data / "train" / "a.txt", 50)
    (data / "train" / "meta.json").write_text(json.dumps({"author": "me"}))
    before = tree(data)
    config = tiny_config(paths={"train": str(data / "train")}, corpus={"prepared_dir": str(data)})
    with pytest.raises(InputError, match=rf"E327.*folder '{data}' holds the training text path '{data / 'train'}'"):
        pretrain(config, tmp_path / "run", progress=False)
    assert tree(data) == before and not (tmp_path / "run").exists()


def test_a_prepared_dir_that_is_the_text_folder_is_refused(tmp_path, tiny_config):
    text = tmp_path / "texts"
    text.mkdir()
    write_corpus(text / "a.txt", 50)
    config = tiny_config(paths={"train": str(text)}, corpus={"prepared_dir": str(text)})
    with pytest.raises(InputError, match=rf"E327.*folder '{text}' is the training text path"):
        pretrain(config, tmp_path / "run", progress=False)


def test_only_a_folder_marked_as_a_prepared_corpus_of_ours_is_replaced(tmp_path):
    text = write_corpus(tmp_path / "a.txt", 30)
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "meta.json").write_text(json.dumps({"n_tokens": 3, "files": {}}))
    (stranger / "notes.txt").write_text("mine")
    before = tree(stranger)
    with pytest.raises(OutputError, match=rf"E302.*'{stranger}'.*'{FORMAT_NAME}'"):
        prepare_corpus([text], WHITESPACE, stranger, progress=False, log=lambda m: None)
    assert tree(stranger) == before
    ours = tmp_path / "ours"
    ours.mkdir()  # an empty folder is taken, and what is prepared there is ours from then on
    first = prepare_corpus([text], WHITESPACE, ours, progress=False, log=lambda m: None)
    assert json.loads((ours / "meta.json").read_text())["format"]["name"] == FORMAT_NAME
    text.write_text("one two\n")
    again = prepare_corpus([text], WHITESPACE, ours, progress=False, log=lambda m: None)
    assert again.n_tokens == 2 != first.n_tokens


def test_a_corpus_prepared_in_the_format_before_it_was_named_is_prepared_again(tmp_path):
    text = write_corpus(tmp_path / "a.txt", 30)
    folder = tmp_path / "prepared"
    prepare_corpus([text], WHITESPACE, folder, progress=False, log=lambda m: None)
    meta = json.loads((folder / "meta.json").read_text())
    del meta["format"]
    meta["fingerprint"]["version"] = 2
    (folder / "meta.json").write_text(json.dumps(meta))
    messages = []
    prepare_corpus([text], WHITESPACE, folder, progress=False, log=messages.append)
    assert messages[0].startswith("Prepared")
    assert json.loads((folder / "meta.json").read_text())["format"] == {"name": FORMAT_NAME, "version": 3}


# A model folder that is a link or the current folder


def test_export_into_a_link_is_refused_and_the_link_and_its_folder_kept(tmp_path, run_copy):
    run, _ = run_copy
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    around = sorted(p.name for p in tmp_path.iterdir())
    result = export_cli(run, link)
    assert result.exit_code == 1 and "E326" in result.output and "symbolic link" in result.output, result.output
    assert link.is_symlink() and os.readlink(link) == str(target) and list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == around  # no temporary left beside it
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match=rf"E326.*'{dangling}' is a symbolic link"):
        export_checkpoint(run, dangling)
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()
    assert export_checkpoint(run, target)["steps"] == 4  # the folder it points to is fine
    assert (link / "weights.hdf5").exists()


def test_export_into_the_current_folder_is_refused(tmp_path, run_copy, monkeypatch):
    run, _ = run_copy
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for output in (".", str(here), "sub/.."):
        result = export_cli(run, output)
        assert result.exit_code == 1 and "E326" in result.output and "current folder" in result.output, result.output
    assert list(here.iterdir()) == [] and here.is_dir()


def test_a_run_whose_model_folder_is_a_link_is_refused_before_training(tmp_path, run_copy):
    run, text = run_copy
    elsewhere = tmp_path / "elsewhere"
    shutil.move(run / "model", elsewhere)
    (elsewhere / "keep.txt").write_text("mine")
    (run / "model").symlink_to(elsewhere)
    before, kept = tree(run), tree(elsewhere)
    with pytest.raises(OutputError, match=rf"E326.*'{run / 'model'}' is a symbolic link to '{elsewhere}'"):
        resume(run, text)
    assert (run / "model").is_symlink() and tree(elsewhere) == kept
    assert {k: v for k, v in tree(run).items() if not k.startswith("model/")} == {
        k: v for k, v in before.items() if not k.startswith("model/")}


# A checkpoint that is a folder


def test_a_checkpoint_that_is_a_folder_is_named_in_resume_and_export(tmp_path, run_copy):
    run, text = run_copy
    checkpoint = run / "checkpoint.pt"
    checkpoint.unlink()
    checkpoint.mkdir()
    with pytest.raises(DamagedFileError, match=rf"E317.*checkpoint '{checkpoint}' is damaged: it is a folder"):
        resume(run, text)
    result = export_cli(run, tmp_path / "out")
    assert result.exit_code == 1 and "E317" in result.output and "it is a folder" in result.output, result.output
    assert not (tmp_path / "out").exists()


# A second run racing the first


def test_a_second_run_sees_the_first_holding_the_folder_not_a_foreign_one(tmp_path, tiny_config):
    run = tmp_path / "run"
    run.mkdir()
    first = FileLock(run / LOCK_NAME)  # the first run holds the lock and is writing its config
    with first:
        (run / ".config.cfg.host-1.0123456789abcdef.tmp").write_text("[paths]\n")
        with pytest.raises(OutputError, match=rf"E503.*'{run}' is in use by another pretraining process"):
            pretrain(tiny_config(training={"max_steps": 2}), run, progress=False)


def test_a_foreign_folder_is_left_as_it_was_with_no_lock(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="E306"):
        with RunDir(other).lock():
            pass
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
