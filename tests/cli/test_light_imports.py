"""The core stands alone: the pure-PyTorch biLM and the commands that need
no pipeline (embed, pretrain, export and perplexity on pre-tokenised text) import
neither spaCy nor Thinc. Each check runs in a fresh interpreter, since this
one has loaded both already."""

import json
import subprocess
import sys

import h5py
from confection import Config

from ..training.conftest import tiny_settings, write_corpus

HEAVY = ("spacy", "thinc")

# Runs `python -m spacy_elmo ARGS...` (if any) in this interpreter, then
# prints the top-level packages of HEAVY that were imported, as JSON.
RUN_AND_LIST = """
import json, runpy, sys
command = json.loads(sys.argv[1])
import spacy_elmo.bilm
if command:
    sys.argv = ["spacy_elmo", *command]
    try:
        runpy.run_module("spacy_elmo", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        if exit.code:
            raise
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(%r))))
""" % (HEAVY,)


def heavy_imports(*command: str) -> list:
    result = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, json.dumps(list(command))], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_checker_sees_spacy_when_it_is_imported():
    # `mix-weights` loads a pipeline: spaCy is imported, and the check notices.
    assert heavy_imports("mix-weights", "--help") == []  # its help alone does not load one
    result = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST.replace("import spacy_elmo.bilm", "import spacy_elmo.models"), "[]"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["spacy", "thinc"]


def test_import_bilm_and_the_package_import_no_spacy_or_thinc():
    assert heavy_imports() == []


def test_embed_imports_no_spacy_or_thinc(tmp_path, fixture_paths):
    text = tmp_path / "input.txt"
    text.write_text("The cat sat .\nHello world !\n", encoding="utf8")
    output = tmp_path / "out.hdf5"
    assert heavy_imports("embed", *map(str, fixture_paths), str(text), str(output), "--layers", "top") == []
    with h5py.File(output, "r") as fin:
        assert fin["0"].shape == (4, 32) and fin["1"].shape == (3, 32)


def test_pretrain_export_and_perplexity_on_pretokenised_text_import_no_spacy_or_thinc(tmp_path):
    train, dev = write_corpus(tmp_path / "train.txt", 60), write_corpus(tmp_path / "dev.txt", 10, seed=1)
    settings = tiny_settings(train, dev, training={"max_steps": 2, "eval_every": 2, "checkpoint_every": 2})
    assert settings["corpus"]["tokenizer"] == "spacy-elmo.WhitespaceTokenizer.v1"
    config = tmp_path / "bilm.cfg"
    Config(settings).to_disk(config)
    run = tmp_path / "run"
    assert heavy_imports("pretrain", str(config), str(run), "--no-progress", "--training.log_every", "1") == []
    assert (run / "model" / "weights.hdf5").is_file()
    ppl = tmp_path / "ppl.json"
    assert heavy_imports("perplexity", str(run / "model"), str(dev), "--output", str(ppl)) == []
    assert json.loads(ppl.read_text())["tokens"] > 0
    assert heavy_imports("export", str(run), str(tmp_path / "snapshot")) == []
    assert (tmp_path / "snapshot" / "weights.hdf5").is_file()
