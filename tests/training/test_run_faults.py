"""A run folder whose data or files changed or were damaged, binary input and a
full disk: each a coded error that names the file, and nothing of the run lost."""
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.errors import ElmoError
from spacy_elmo.training import load_config, pretrain
from spacy_elmo.training.data.prepared import PreparedCorpus
from spacy_elmo.training.run.checkpoint import load_checkpoint

from .conftest import write_corpus


@pytest.fixture
def started(tmp_path, tiny_config):
    """A run stopped after its checkpoint of step 4, and how to resume it."""
    run = tmp_path / "run"
    pretrain(tiny_config(training={"max_steps": 4}), run, progress=False)

    def resume(**sections):
        sections.setdefault("training", {"max_steps": 6})
        return pretrain(tiny_config(**sections), run, resume=True, progress=False)

    return run, resume


def snapshot(run: Path) -> dict:
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"}


def pretrain_cli(*args) -> "object":
    return CliRunner().invoke(app, ["pretrain", *map(str, args), "--no-progress"])


# The data a run was started on


@pytest.mark.parametrize("which", ["train", "dev"])
def test_resume_after_the_text_changed_is_refused(started, corpus, dev_corpus, which):
    run, resume = started
    text = corpus if which == "train" else dev_corpus
    original = text.read_bytes()
    before = snapshot(run)
    text.write_text(text.read_text().replace("cat", "lion"))
    with pytest.raises(ElmoError, match=rf"E316.*{which} file '{text}' changed.*new run in another folder"):
        resume()
    assert snapshot(run) == before
    text.write_bytes(original)  # the data put back: the run continues
    assert resume().state.step == 6


def test_a_change_that_keeps_size_and_time_is_seen(started, corpus):
    run, resume = started
    stat = corpus.stat()
    corpus.write_text(corpus.read_text().replace("cat", "dog"))  # same length
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert corpus.stat().st_size == stat.st_size
    with pytest.raises(ElmoError, match=rf"E316.*'{corpus}' changed"):
        resume()


def test_a_file_added_to_a_training_folder_is_a_change(tmp_path, tiny_config):
    folder = tmp_path / "texts"
    folder.mkdir()
    write_corpus(folder / "a.txt", 100)
    write_corpus(folder / "c.txt", 50, seed=2)
    run = tmp_path / "run"
    pretrain(tiny_config(paths={"train": str(folder)}, training={"max_steps": 4}), run, progress=False)
    write_corpus(folder / "b.txt", 100, seed=3)
    with pytest.raises(ElmoError, match=rf"E316.*'{folder / 'b.txt'}' was added"):
        pretrain(tiny_config(paths={"train": str(folder)}, training={"max_steps": 6}), run, resume=True,
                 progress=False)
    (folder / "b.txt").unlink()
    (folder / "c.txt").unlink()
    with pytest.raises(ElmoError, match=rf"E316.*'{folder / 'c.txt'}' was removed"):
        pretrain(tiny_config(paths={"train": str(folder)}, training={"max_steps": 6}), run, resume=True,
                 progress=False)


# Damaged files in the run folder


@pytest.mark.parametrize("damage", ["empty", "truncated", "text"])
def test_a_damaged_checkpoint_is_named(started, damage):
    run, resume = started
    checkpoint = run / "checkpoint.pt"
    data = checkpoint.read_bytes()
    checkpoint.write_bytes({"empty": b"", "truncated": data[: len(data) // 2], "text": b"not a checkpoint\n"}[damage])
    before = snapshot(run)
    with pytest.raises(ElmoError, match=rf"E317.*checkpoint '{checkpoint}' is damaged.*start") as err:
        resume()
    assert "weights_only" not in str(err.value)  # torch's advice to load it unsafely is not passed on
    after = snapshot(run)
    after.pop("config.cfg"), before.pop("config.cfg")  # the new max_steps, a setting that may change
    assert after == before


def test_a_checkpoint_of_other_values_is_named(started):
    run, resume = started
    torch.save({"format": 2, "state": {"step": "four"}}, run / "checkpoint.pt")
    with pytest.raises(ElmoError, match=r"E317.*checkpoint.*is damaged"):
        resume()


def test_an_empty_checkpoint_through_the_cli(started, tmp_path, tiny_config):
    run, _ = started
    (run / "checkpoint.pt").write_bytes(b"")
    config = tmp_path / "tiny.cfg"
    tiny_config().to_config().to_disk(config)
    result = pretrain_cli(config, run, "--resume")
    assert result.exit_code == 1 and "E317" in result.output and "Aborted" not in result.output


# The prepared corpus: derived from the text, checked at every reuse


@pytest.mark.parametrize("cut", ["half", "odd"])
def test_a_damaged_prepared_corpus_is_prepared_again_on_resume(started, cut, capsys):
    run, resume = started
    tokens = run / "prepared" / "train" / "tokens.u32"
    whole = tokens.read_bytes()
    tokens.write_bytes(whole[: len(whole) // 2] if cut == "half" else whole[:-2])  # "odd": not a whole uint32
    with pytest.raises(ElmoError, match=r"E322.*prepared corpus.*tokens\.u32 has [\d,]+ bytes, expected"):
        PreparedCorpus.load(run / "prepared" / "train")
    capsys.readouterr()
    assert resume().state.step == 6
    assert "is damaged (tokens.u32 has" in " ".join(capsys.readouterr().out.split())
    assert tokens.read_bytes() == whole  # prepared again, the same as at the start
    assert PreparedCorpus.load(run / "prepared" / "train").n_tokens == len(whole) // 4


def test_a_prepared_corpus_changed_in_place_is_prepared_again(started, capsys):
    run, resume = started
    tokens = run / "prepared" / "train" / "tokens.u32"
    whole = tokens.read_bytes()
    tokens.write_bytes(whole[4:] + whole[:4])  # the same size, other tokens
    capsys.readouterr()
    assert resume().state.step == 6
    assert "tokens.u32 is not the file that was written" in " ".join(capsys.readouterr().out.split())
    assert tokens.read_bytes() == whole


# The run's own folders inside the text folder


@pytest.mark.parametrize("inside", ["run", "prepared"])
def test_a_run_inside_its_text_folder_is_refused_before_anything_is_written(tmp_path, tiny_config, inside):
    text = tmp_path / "corpus"
    text.mkdir()
    write_corpus(text / "a.txt", 50)
    before = sorted(p.name for p in text.iterdir())
    run = text / "run" if inside == "run" else tmp_path / "run"
    corpus = {"prepared_dir": str(text / "cache" / "prepared")} if inside == "prepared" else {}
    what = "run folder" if inside == "run" else "prepared corpus folder"
    with pytest.raises(ElmoError, match=rf"E320.*{what} '.*' is inside the training text folder '{text}'"):
        pretrain(tiny_config(paths={"train": str(text)}, corpus=corpus), run, progress=False)
    assert sorted(p.name for p in text.iterdir()) == before and not run.exists()
    config = tmp_path / "tiny.cfg"
    tiny_config(paths={"train": str(text)}, corpus=corpus).to_config().to_disk(config)
    result = pretrain_cli(config, run)
    assert result.exit_code == 1 and "E320" in result.output
    assert sorted(p.name for p in text.iterdir()) == before


def test_a_hidden_run_folder_inside_the_text_folder_is_left_out_of_the_text(tmp_path, tiny_config):
    text = tmp_path / "corpus"
    text.mkdir()
    write_corpus(text / "a.txt", 50)
    run = text / ".run"
    assert pretrain(tiny_config(paths={"train": str(text)}, training={"max_steps": 4}), run,
                    progress=False).state.step == 4
    assert [f["path"] for f in json.loads((run / "inputs.json").read_text())["train"]] == [str(text / "a.txt")]
    assert pretrain(tiny_config(paths={"train": str(text)}, training={"max_steps": 6}), run, resume=True,
                    progress=False).state.step == 6


def test_the_text_files_are_listed_once_per_run(tmp_path, tiny_config, monkeypatch):
    text = tmp_path / "corpus"
    text.mkdir()
    write_corpus(text / "a.txt", 50)
    listed = []
    rglob = Path.rglob

    def counting(self, pattern):
        listed.append(self)
        return rglob(self, pattern)

    monkeypatch.setattr(Path, "rglob", counting)
    pretrain(tiny_config(paths={"train": str(text)}, training={"max_steps": 2}), tmp_path / "run", progress=False)
    assert listed.count(text) == 1



@pytest.mark.parametrize("damage", ["lines_cut", "last_word_cut", "empty", "not_utf8"])
def test_a_damaged_vocabulary_is_named(started, damage):
    run, resume = started
    vocab = run / "vocab.txt"
    text = vocab.read_bytes()
    vocab.write_bytes({
        "lines_cut": b"".join(text.splitlines(keepends=True)[:10]),
        "last_word_cut": text[:-3],
        "empty": b"",
        "not_utf8": text + b"\xff\n",
    }[damage])
    with pytest.raises(ElmoError, match=rf"E317.*vocabulary '{vocab}' is damaged.*[Rr]emove it"):
        resume()
    vocab.unlink()  # as the message says: counted again from the training text
    assert resume().state.step == 6
    assert vocab.read_bytes() == text


@pytest.mark.parametrize("damage", [b"\n[paths]\ntrain = \"x\n", b"\xff\xfe\x00\x01", b"seed = 3\n"])
def test_a_damaged_run_config_is_named(started, damage):
    run, resume = started
    config = run / "config.cfg"
    if damage == b"seed = 3\n":
        config.write_bytes(damage)  # no section header left
    else:
        config.write_bytes(config.read_bytes() + damage)
    before = snapshot(run)
    with pytest.raises(ElmoError, match=rf"E317.*config '{config}' is damaged"):
        resume()
    assert snapshot(run) == before


def test_a_run_config_with_a_wrong_value_is_named(started):
    run, resume = started
    config = run / "config.cfg"
    config.write_text(config.read_text().replace("seed = 0", 'seed = "zero"'))
    with pytest.raises(ElmoError, match=rf"E317.*config '{config}' is damaged.*system -> seed"):
        resume()


def test_a_log_line_that_is_not_utf8_is_skipped(started, capsys):
    run, resume = started
    log = run / "log.jsonl"
    good = log.read_bytes()
    log.write_bytes(good + b'{"kind": "train", "step": 3, "note": "\xff"}\n')
    assert resume().state.step == 6
    assert "log.jsonl" in capsys.readouterr().out
    lines = log.read_bytes().splitlines(keepends=True)
    assert b"".join(lines[: len(good.splitlines())]) == good and b"\xff" not in log.read_bytes()


# Binary input


def test_a_binary_config_is_named(tmp_path):
    binary = tmp_path / "ls.cfg"
    binary.write_bytes(Path(shutil.which("ls")).read_bytes()[:4096])
    with pytest.raises(ElmoError, match=rf"E318.*'{binary}'"):
        load_config(binary)
    result = pretrain_cli(binary, tmp_path / "out")
    assert result.exit_code == 1 and "E318" in result.output
    assert not (tmp_path / "out").exists()


def test_a_config_that_is_not_a_config_is_named(tmp_path):
    text = tmp_path / "notes.cfg"
    text.write_text("hello world\n")
    with pytest.raises(ElmoError, match=rf"E318.*'{text}'.*no section headers"):
        load_config(text)


@pytest.mark.parametrize("name, reason", [
    ("blank:zz", "spaCy has no language 'zz'"),
    ("en_core_web_xx", "not a registered tokenizer, an installed spaCy pipeline package or a path"),
    ("spacy-elmo.WhitespaceTokenizer.v2", "did you mean 'spacy-elmo.WhitespaceTokenizer.v1'"),
    ("whitespace", "not a registered tokenizer"),
])
def test_an_unknown_tokenizer_is_refused_before_the_run_folder_is_made(tmp_path, tiny_config, name, reason):
    run = tmp_path / "run"
    with pytest.raises(ElmoError, match=rf"E323.*{name!r} \(corpus\.tokenizer\) is unknown.*{reason}"):
        pretrain(tiny_config(corpus={"tokenizer": name}), run, progress=False)
    assert not run.exists()
    config = tmp_path / "tiny.cfg"
    tiny_config().to_config().to_disk(config)
    result = pretrain_cli(config, run, "--corpus.tokenizer", name)
    assert result.exit_code == 1 and "E323" in result.output and "Traceback" not in result.output
    assert not run.exists()


def test_a_config_naming_an_unknown_variable_is_refused_before_the_run_folder_is_made(tmp_path, tiny_config):
    config = tmp_path / "tiny.cfg"
    tiny_config().to_config().to_disk(config)
    config.write_text(config.read_text().replace("seed = 0", "seed = ${paths.nope}"))
    with pytest.raises(ElmoError, match=r"E324.*tiny\.cfg.*\[system\] seed = \$\{paths\.nope\} names 'paths\.nope'"):
        load_config(config)
    run = tmp_path / "run"
    result = pretrain_cli(config, run)
    assert result.exit_code == 1 and "E324" in result.output and "Config validation error" not in result.output
    assert not run.exists()



@pytest.mark.parametrize("which", ["train", "dev"])
def test_binary_text_files_are_refused(tmp_path, tiny_config, which):
    folder = tmp_path / "binaries"
    folder.mkdir()
    ls = Path(shutil.which("ls")).read_bytes()
    (folder / "a.bin").write_bytes(ls)
    (folder / "b.bin").write_bytes(ls)
    run = tmp_path / "run"
    with pytest.raises(ElmoError, match=rf"E319.*text '{folder / 'a.bin'}' is a binary file.*1 more.*paths\.{which}"):
        pretrain(tiny_config(paths={which: str(folder)}), run, progress=False)
    assert not run.exists()


def test_text_with_a_few_bad_lines_is_not_binary(tmp_path, tiny_config, corpus):
    corpus.write_bytes(corpus.read_bytes() + b"caf\xe9 latin-1\n")
    result = pretrain(tiny_config(training={"max_steps": 2}), tmp_path / "run", progress=False)
    assert result.state.step == 2


# No room to write


@contextmanager
def file_size_limit(n_bytes: int):
    """Writes past `n_bytes` fail with EFBIG (Python ignores SIGXFSZ), as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def temporaries(folder: Path):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*") if p.name != ".lock")


def test_no_room_while_preparing_the_corpus(tmp_path, tiny_config):
    big = write_corpus(tmp_path / "big.txt", 8000)  # 4 bytes a token: more than 100 KB of token ids
    run = tmp_path / "run"
    with file_size_limit(100_000):
        with pytest.raises(ElmoError, match=rf"E525.*'{run / 'prepared' / 'train'}'.*File too large"):
            pretrain(tiny_config(paths={"train": str(big)}), run, progress=False)
    assert temporaries(run) == [] and not (run / "prepared" / "train").exists()
    # With room, the same command runs.
    assert pretrain(tiny_config(paths={"train": str(big)}, training={"max_steps": 2}), run,
                    progress=False).state.step == 2


def test_no_room_for_the_checkpoint(tmp_path, tiny_config):
    run = tmp_path / "run"
    with file_size_limit(100_000):  # the checkpoint is about 300 KB
        with pytest.raises(ElmoError, match=rf"E525.*'{run / 'checkpoint.pt'}'"):
            pretrain(tiny_config(), run, progress=False)
    assert temporaries(run) == [] and not (run / "checkpoint.pt").exists()


def test_no_room_for_a_later_checkpoint_keeps_the_last(started):
    run, resume = started
    kept = (run / "checkpoint.pt").read_bytes()
    with file_size_limit(100_000):
        with pytest.raises(ElmoError, match=rf"E525.*'{run / 'checkpoint.pt'}'"):
            resume(training={"max_steps": 8})
    assert (run / "checkpoint.pt").read_bytes() == kept and temporaries(run) == []
    assert load_checkpoint(run / "checkpoint.pt")["state"].step == 4


def test_no_room_through_the_cli(tmp_path, tiny_config):
    big = write_corpus(tmp_path / "big.txt", 8000)
    config = tmp_path / "tiny.cfg"
    tiny_config(paths={"train": str(big)}).to_config().to_disk(config)
    with file_size_limit(100_000):
        result = pretrain_cli(config, tmp_path / "run")
    assert result.exit_code == 1 and "E525" in result.output
    assert temporaries(tmp_path / "run") == []


@pytest.mark.slow
def test_no_room_under_ulimit_in_a_shell(tmp_path, tiny_config):
    big = write_corpus(tmp_path / "big.txt", 8000)
    config = tmp_path / "tiny.cfg"
    tiny_config(paths={"train": str(big)}).to_config().to_disk(config)
    run = tmp_path / "run"
    command = f"ulimit -f 100; exec {shlex.quote(sys.executable)} -m spacy_elmo pretrain {config} {run} --no-progress"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "E525" in result.stdout and "Traceback" not in result.stdout + result.stderr
    assert temporaries(run) == []
