"""An ELMo pipeline through spaCy's own CLI: ``spacy package`` (installed in a
fresh virtual environment, offline), ``spacy evaluate``, ``spacy benchmark
speed``, and our commands as ``python -m spacy elmo``."""

import json
import re
import site
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import numpy
import pytest
from packaging.requirements import Requirement
from spacy.tokens import DocBin
from spacy.util import fix_random_seed

from .pipelines import NER_ELMO, elmo_pipeline
from .util import make_docs

PACKAGE = "en_elmo_test"
TEXTS = ["Alice went to Paris and it was great .", "Frank went to Lima and it was dull ."]

PREDICT = """
import json, sys, spacy
nlp = spacy.load(sys.argv[1])
docs = list(nlp.pipe(json.loads(sys.argv[2])))
print(json.dumps({
    "file": spacy.util.get_package_path(sys.argv[1]).as_posix() if not sys.argv[1].startswith("/") else "",
    "ents": [[(e.start, e.end, e.label_) for e in d.ents] for d in docs],
    "cats": [d.cats for d in docs],
    "elmo": [d._.elmo.layers.tolist() for d in docs],
}))
"""


def run(*args, cwd=None, python=sys.executable):
    result = subprocess.run([str(python), *map(str, args)], capture_output=True, text=True, cwd=cwd)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def predict(nlp, texts):
    docs = list(nlp.pipe(texts))
    return {
        "ents": [[[e.start, e.end, e.label_] for e in d.ents] for d in docs],
        "cats": [d.cats for d in docs],
        "elmo": [d._.elmo.layers for d in docs],
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory, fixture_paths):
    """elmo + ner (an ELMo listener) + textcat, trained a little, on disk."""
    path = tmp_path_factory.mktemp("trained")
    bilm = path / "bilm"
    bilm.mkdir()
    (bilm / "options.json").write_bytes(fixture_paths[0].read_bytes())
    (bilm / "weights.hdf5").write_bytes(fixture_paths[1].read_bytes())
    fix_random_seed(0)  # unseeded, 30 updates sometimes left the NER predicting nothing
    nlp, examples = elmo_pipeline(bilm, with_ner=False)
    nlp.add_pipe("ner", config={"model": NER_ELMO})
    nlp.add_pipe("textcat")
    nlp.initialize(lambda: examples)
    optimizer = nlp.create_optimizer()
    for _ in range(50):
        nlp.update(examples, sgd=optimizer)
    nlp.meta.update(name=PACKAGE[3:], version="0.0.1")
    nlp.to_disk(path / "pipeline")
    DocBin(docs=make_docs(nlp, 12, seed=1), store_user_data=True).to_disk(path / "dev.spacy")
    return nlp, path


@pytest.mark.slow
def test_spacy_package_wheel_installs_offline_in_a_fresh_venv_and_predicts_the_same(tmp_path, trained):
    nlp, path = trained
    want = predict(nlp, TEXTS)
    assert any(want["ents"]) and all(set(c) == {"POSITIVE", "NEGATIVE"} for c in want["cats"])
    (tmp_path / "packages").mkdir()
    run("-m", "spacy", "package", path / "pipeline", tmp_path / "packages", "--build", "wheel", cwd=tmp_path)
    wheel = next((tmp_path / "packages").glob(f"{PACKAGE}-0.0.1/dist/{PACKAGE}-0.0.1-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{PACKAGE}-0.0.1.dist-info/METADATA").decode("utf8")
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    elmo = [Requirement(r) for r in requires if Requirement(r).name == "spacy-elmo"]
    assert elmo and elmo[0].specifier.contains(version("spacy-elmo")), requires  # found by spacy package itself
    # A fresh environment that sees this one's packages (spaCy, torch, spacy-elmo) but not the pipeline.
    # Not `venv --system-site-packages`: from inside a virtual environment that shows the *base*
    # interpreter's packages, not this environment's. A .pth file adds this one's site folders
    # (their own .pth files, an editable install's included), after the new environment's own.
    venv = tmp_path / "venv"
    run("-m", "venv", venv)
    python = venv / "bin" / "python"
    purelib = Path(run("-c", "import sysconfig; print(sysconfig.get_path('purelib'))", python=python).strip())
    (purelib / "outer_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({folder!r})\n" for folder in site.getsitepackages())
    )
    run("-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q", wheel, python=python)
    got = json.loads(
        run("-c", PREDICT, PACKAGE, json.dumps(TEXTS), cwd=tmp_path, python=python).strip().splitlines()[-1]
    )
    assert Path(got["file"]).is_relative_to(venv)  # loaded from the installed package, not from here
    assert got["ents"] == want["ents"]
    for loaded, original in zip(got["cats"], want["cats"]):
        assert loaded == pytest.approx(original, abs=1e-5)
    for loaded, original in zip(got["elmo"], want["elmo"]):
        loaded = numpy.asarray(loaded, dtype=original.dtype)
        assert loaded.shape == original.shape
        assert numpy.abs(loaded - original).max() <= 1e-5 * max(1.0, float(numpy.abs(original).max()))


@pytest.mark.slow
def test_spacy_evaluate_and_benchmark_speed_run_on_an_elmo_pipeline(tmp_path, trained):
    _, path = trained
    output = tmp_path / "scores.json"
    out = run("-m", "spacy", "evaluate", path / "pipeline", path / "dev.spacy", "--output", output, cwd=tmp_path)
    scores = json.loads(output.read_text())
    assert 0 <= scores["ents_f"] <= 1 and 0 <= scores["cats_score"] <= 1, scores
    assert "NER P" in out and "TEXTCAT" in out
    out = run(
        "-m",
        "spacy",
        "benchmark",
        "speed",
        path / "pipeline",
        path / "dev.spacy",
        "--batch-size",
        "2",
        "--batches",
        "30",
        "--warmup",
        "1",
        cwd=tmp_path,
    )
    assert re.search(r"Mean: [\d.,]+ words/s", out), out[-1500:]


@pytest.mark.slow
def test_our_commands_run_as_python_m_spacy_elmo(tmp_path, trained):
    _, path = trained
    out = run("-m", "spacy", "elmo", "--help", cwd=tmp_path)
    for command in ("embed", "pretrain", "perplexity", "mix-weights"):
        assert command in out
    out = run("-m", "spacy", "elmo", "mix-weights", path / "pipeline", cwd=tmp_path)
    assert "ner" in out and "gamma" in out
    assert "elmo" in run("-m", "spacy", "--help", cwd=tmp_path)
