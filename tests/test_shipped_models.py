"""The shipped biLM, elmo-en-small: package data found by name wherever a model is taken
(initialize, a config, embed, perplexity, pretrain --init-from, BiLM.from_allennlp), giving
the layers of its files bit for bit, its files checked against SHA256SUMS once per stamp."""

import configparser
import fnmatch
import json
import os
import shutil
from pathlib import Path

import h5py
import numpy
import pytest
import spacy
import torch
from typer.testing import CliRunner

import spacy_elmo
from spacy_elmo import shipped_models
from spacy_elmo.bilm import BiLM
from spacy_elmo.cli import app
from spacy_elmo.errors import DamagedFileError, InputError
from spacy_elmo.published_models import model_folder, resolve_model
from spacy_elmo.shipped_models import ELMO_EN_SMALL, SUMS_NAME, shipped_model
from spacy_elmo.util import file_digest

ROOT = Path(__file__).resolve().parents[1]
# The package's folder, read as files, not through the name.
FOLDER = Path(spacy_elmo.__file__).parent / "pretrained" / ELMO_EN_SMALL
OPTIONS, WEIGHTS = FOLDER / "options.json", FOLDER / "weights.hdf5"
# The SHA-256 of the biLM's two files in the repository's pretrained/elmo-en-small (v3), from
# which they were moved: the same bytes, so the same layers.
V3_SHA256 = {
    "options.json": "97581547eaebebe28118880b80c33bbff0cf3a85cd0ba107d86158a32bb4fc45",
    "weights.hdf5": "efec1c02f06460236c8653bca32cc86ea3d4008b5fb8855f141c503761638738",
}
SENTENCES = [["The", "bank", "raised", "rates", "."], ["Hello", "world", "!"], ["Ünïcödé", "x" * 60]]
TEXT = "".join(" ".join(sentence) + "\n" for sentence in SENTENCES)
ELMO_CONFIG = """
[nlp]
lang = "en"
pipeline = ["sentencizer", "elmo"]

[components]

[components.sentencizer]
factory = "sentencizer"

[components.elmo]
factory = "elmo"

[initialize]

[initialize.components]

[initialize.components.elmo]
options_file = "{options}"
"""


@pytest.fixture
def package_copy(tmp_path, monkeypatch) -> Path:
    """A copy of the package's shipped models, which the name then finds instead."""
    copy = tmp_path / "pretrained"
    shutil.copytree(FOLDER.parent, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(shipped_models, "pretrained_dir", lambda: copy)
    return copy / ELMO_EN_SMALL


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text(TEXT, encoding="utf8")
    return path


def layers(bilm: BiLM) -> torch.Tensor:
    with torch.inference_mode():
        return bilm.eval().encode_words(SENTENCES)


def test_the_package_holds_the_v3_files_and_the_name_gives_their_layers_bit_for_bit():
    for name, sha256 in V3_SHA256.items():
        assert file_digest(FOLDER / name)["sha256"] == sha256
    by_name, from_files = BiLM.from_allennlp(ELMO_EN_SMALL), BiLM.from_allennlp(OPTIONS, WEIGHTS)
    assert torch.equal(layers(by_name), layers(from_files))
    assert resolve_model(ELMO_EN_SMALL) == (FOLDER, None)  # no download, no cache
    assert model_folder(ELMO_EN_SMALL) == FOLDER and model_folder("some/folder") == Path("some/folder")


def test_every_shipped_file_but_the_card_is_summed_and_the_wheel_carries_it():
    listed = {line.split()[1] for line in (FOLDER / SUMS_NAME).read_text().splitlines()}
    assert listed == {p.name for p in FOLDER.iterdir()} - {"README.md", SUMS_NAME}
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    globs = setup["options.package_data"]["spacy_elmo.pretrained"].split()
    for path in FOLDER.iterdir():
        assert any(fnmatch.fnmatch(f"{ELMO_EN_SMALL}/{path.name}", glob) for glob in globs), path.name


def test_an_unknown_name_lists_the_shipped_one():
    with pytest.raises(InputError) as err:
        resolve_model("elmo-en-smal")
    assert err.value.code == "E709" and ELMO_EN_SMALL in str(err.value)
    with pytest.raises(InputError, match="E701"):
        shipped_model("elmo-en-smal")


def test_the_name_works_in_initialize_and_in_a_config(tmp_path):
    def pipeline(options: str) -> spacy.Language:
        path = tmp_path / "config.cfg"
        path.write_text(ELMO_CONFIG.format(options=options), encoding="utf8")
        nlp = spacy.util.load_model_from_config(spacy.util.load_config(path), auto_fill=True)
        nlp.initialize()
        return nlp

    text = "The bank raised rates. Hello world!"
    by_name, from_folder = pipeline(ELMO_EN_SMALL), pipeline(str(FOLDER))
    assert numpy.array_equal(by_name(text)._.elmo.layers, from_folder(text)._.elmo.layers)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo").initialize(options_file=ELMO_EN_SMALL)
    assert numpy.array_equal(nlp(text)._.elmo.layers, from_folder(text)._.elmo.layers)


def test_the_configs_and_the_workflow_name_it():
    for config in ("ner_elmo", "textcat_elmo", "joint_elmo", "ner_elmo_output", "textcat_elmo_output", "pos_probe"):
        loaded = spacy.util.load_config(ROOT / "configs" / f"{config}.cfg", interpolate=True)
        assert loaded["paths"]["elmo"] == ELMO_EN_SMALL
        assert loaded["initialize"]["components"]["elmo"]["options_file"] == ELMO_EN_SMALL
    assert "elmo-en-small" in (ROOT / "project.yml").read_text()
    assert not (ROOT / "pretrained").exists()


def test_the_name_works_in_embed(tmp_path, text_file):
    runner = CliRunner()
    by_name, from_files = tmp_path / "name.hdf5", tmp_path / "files.hdf5"
    result = runner.invoke(app, ["embed", ELMO_EN_SMALL, str(text_file), str(by_name)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["embed", str(OPTIONS), str(WEIGHTS), str(text_file), str(from_files)])
    assert result.exit_code == 0, result.output
    with h5py.File(by_name, "r") as got, h5py.File(from_files, "r") as want:
        assert sorted(got) == sorted(want) == ["0", "1", "2", "sentence_to_index"]
        for name in ("0", "1", "2"):
            numpy.testing.assert_array_equal(got[name][()], want[name][()])


def test_the_name_works_in_perplexity(tmp_path, text_file):
    reports = {}
    for which, model in (("name", ELMO_EN_SMALL), ("folder", str(FOLDER))):
        output = tmp_path / f"{which}.json"
        result = CliRunner().invoke(app, ["perplexity", model, str(text_file), "--output", str(output)])
        assert result.exit_code == 0, result.output
        reports[which] = json.loads(output.read_text())
    assert reports["name"] == reports["folder"] and reports["name"]["tokens"] == 10 + len(SENTENCES)
    result = CliRunner().invoke(app, ["perplexity", "elmo-en-smal", str(text_file)])
    assert result.exit_code == 2 and "neither a folder nor a model's name" in result.output


def test_the_name_works_in_pretrain_init_from_and_vocab_path(tmp_path, text_file):
    run = tmp_path / "run"
    settings = (
        "--paths.train",
        str(text_file),
        "--corpus.tokenizer",
        "spacy-elmo.WhitespaceTokenizer.v1",
        "--system.threads",
        "1",
        "--training.max_steps",
        "1",
        "--training.tokens_per_batch",
        "200",
        "--training.dropout",
        "0",
        "--training.optimizer.learn_rate",
        "1e-12",
        "--training.eval_every",
        "1",
        "--training.checkpoint_every",
        "1",
        "--training.log_every",
        "1",
    )
    result = CliRunner().invoke(
        app,
        [
            "pretrain",
            str(ROOT / "configs" / "bilm_release.cfg"),
            str(run),
            "--init-from",
            ELMO_EN_SMALL,
            "--vocab.path",
            ELMO_EN_SMALL,
            "--no-progress",
            *settings,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Continuing from the softmax" in result.output  # its vocabulary and softmax, by name
    assert (run / "model" / "vocab.txt").read_bytes() == (FOLDER / "vocab.txt").read_bytes()
    for name in ("weights.hdf5", "softmax.hdf5"):  # one step at a learning rate of 1e-12: the same weights
        with h5py.File(run / "model" / name, "r") as after, h5py.File(FOLDER / name, "r") as before:
            names = []
            before.visititems(lambda key, item: names.append(key) if isinstance(item, h5py.Dataset) else None)
            assert names and all(key in after for key in names)
            for key in names:
                numpy.testing.assert_allclose(after[key][()], before[key][()], rtol=0, atol=1e-6, err_msg=key)


def test_a_damaged_shipped_file_is_refused_with_a_coded_error(package_copy):
    weights = package_copy / "weights.hdf5"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(DamagedFileError, match=r"E710.*weights\.hdf5' has the SHA-256") as err:
        BiLM.from_allennlp(ELMO_EN_SMALL)
    assert "--force-reinstall" in str(err.value)
    weights.unlink()
    with pytest.raises(DamagedFileError, match=r"E710.*weights\.hdf5' cannot be read"):
        resolve_model(ELMO_EN_SMALL)
    (package_copy / SUMS_NAME).write_text("not a checksum  options.json\n")
    with pytest.raises(DamagedFileError, match=r"E710.*SHA256SUMS' has a line 1 that is not"):
        shipped_model(ELMO_EN_SMALL)


def test_a_damaged_shipped_file_ends_a_command_with_the_coded_error(package_copy, text_file, tmp_path):
    (package_copy / "vocab.txt").write_text("<S>\n</S>\n<UNK>\n")
    result = CliRunner().invoke(app, ["perplexity", ELMO_EN_SMALL, str(text_file)])
    assert result.exit_code == 1 and "E710" in result.output and "vocab.txt" in result.output


def test_the_sums_are_checked_once_per_file_stamp(package_copy, monkeypatch):
    hashed = []

    def counting_digest(path):
        hashed.append(Path(path).name)
        return file_digest(path)

    monkeypatch.setattr(shipped_models, "file_digest", counting_digest)
    listed = len((package_copy / SUMS_NAME).read_text().splitlines())
    assert shipped_model(ELMO_EN_SMALL) == package_copy
    BiLM.from_allennlp(ELMO_EN_SMALL)  # the second load of the process: no file hashed again
    assert len(hashed) == listed == 6
    options = package_copy / "options.json"
    stat = options.stat()
    os.utime(options, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a new stamp: hashed again
    shipped_model(ELMO_EN_SMALL)
    assert hashed[listed:] == ["options.json"]


def test_the_sums_are_taken_without_python_3_11s_file_digest(monkeypatch):
    import hashlib

    monkeypatch.delattr(hashlib, "file_digest", raising=False)  # as on Python 3.9 and 3.10
    options = OPTIONS.read_bytes()
    assert file_digest(OPTIONS) == {"size": len(options), "sha256": V3_SHA256["options.json"]}
