"""`mix-weights`: every listener's mix read against its own upstream biLM, and
a chart only where the user asks for one, written whole or not at all."""

import copy
import json
import os

import pytest
import spacy
from typer.testing import CliRunner

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.cli import app

from ..pipeline.pipelines import NER_ELMO
from ..pipeline.util import examples_of, make_docs


@pytest.fixture(scope="module")
def two_depths(tmp_path_factory, fixture_paths):
    """A pipeline with two elmo components, of 3 and 2 layers, each with a listener."""
    root = tmp_path_factory.mktemp("two_depths")
    options = json.loads(fixture_paths[0].read_text())
    options["lstm"]["n_layers"] = 1
    BiLM(BiLMOptions.from_allennlp(options)).save_allennlp(root / "shallow")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.add_pipe("elmo", name="shallow_elmo")
    ner = copy.deepcopy(NER_ELMO)
    ner["tok2vec"]["elmo"]["upstream"] = "elmo"
    nlp.add_pipe("ner", config={"model": ner})
    textcat = {
        "@architectures": "spacy.TextCatReduce.v1",
        "exclusive_classes": True,
        "use_reduce_first": False,
        "use_reduce_last": False,
        "use_reduce_max": False,
        "use_reduce_mean": True,
        "tok2vec": copy.deepcopy(NER_ELMO["tok2vec"]),
    }
    textcat["tok2vec"]["elmo"]["upstream"] = "shallow_elmo"
    nlp.add_pipe("textcat", config={"model": textcat})
    nlp.config["initialize"]["components"]["elmo"] = {
        "options_file": str(fixture_paths[0]),
        "weights_file": str(fixture_paths[1]),
    }
    nlp.config["initialize"]["components"]["shallow_elmo"] = {
        "options_file": str(root / "shallow"),
        "weights_file": None,
    }
    examples = examples_of(nlp, make_docs(nlp, 8))
    nlp.initialize(lambda: examples)
    nlp.to_disk(root / "pipeline")
    return root / "pipeline"


def files_in(path):
    return sorted(p.relative_to(path) for p in path.rglob("*"))


def test_each_listener_is_read_against_its_own_upstream(two_depths, tmp_path):
    before = files_in(two_depths)
    result = CliRunner().invoke(app, ["mix-weights", str(two_depths)])
    assert result.exit_code == 0, result.output
    assert "'elmo' (3 layers)" in result.output and "'shallow_elmo' (2 layers)" in result.output
    assert "0.333" in result.output and "0.500" in result.output
    assert files_in(two_depths) == before  # no chart unless asked for
    chart = tmp_path / "charts" / "mix.png"
    result = CliRunner().invoke(app, ["mix-weights", str(two_depths), "--output", str(chart)])
    assert result.exit_code == 0, result.output
    assert chart.stat().st_size > 1000 and files_in(chart.parent) == [chart.relative_to(chart.parent)]


def test_the_table_names_the_layers_as_the_chart_does(two_depths):
    from spacy_elmo.layer_mixes import layer_names

    result = CliRunner().invoke(app, ["mix-weights", str(two_depths)])
    assert result.exit_code == 0, result.output
    headers = [line.split() for line in result.output.splitlines() if line.lstrip().startswith("component")]
    assert headers == [
        ["component", "tokens", "LSTM", "1", "LSTM", "2", "gamma"],
        ["component", "tokens", "LSTM", "1", "gamma"],
    ]
    assert " ".join(headers[0][1:6]) == " ".join(layer_names(3)) and "layer 0" not in result.output


def test_listener_mixes_name_the_upstream(two_depths):
    from spacy_elmo.layer_mixes import listener_mixes

    mixes = listener_mixes(spacy.load(two_depths))
    assert {name: (mix["upstream"], len(mix["weights"])) for name, mix in mixes.items()} == {
        "ner": ("elmo", 3),
        "textcat": ("shallow_elmo", 2),
    }


@pytest.mark.parametrize("where", ["a folder", "under /proc", "an unknown suffix"])
def test_a_chart_that_cannot_be_written_is_a_coded_error_and_nothing_is_left(two_depths, tmp_path, where):
    output = {"a folder": tmp_path, "under /proc": "/proc/mix.png", "an unknown suffix": tmp_path / "mix.xyz"}[where]
    before = files_in(tmp_path)
    result = CliRunner().invoke(app, ["mix-weights", str(two_depths), "-o", str(output)])
    assert result.exit_code == 1 and "E520" in result.output, result.output
    assert files_in(tmp_path) == before


def test_a_chart_under_a_file_or_in_a_missing_folder(two_depths, tmp_path):
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(app, ["mix-weights", str(two_depths), "-o", str(tmp_path / "file" / "mix.png")])
    assert result.exit_code == 1 and "E510" in result.output, result.output
    (tmp_path / "not_a_pipeline").mkdir()
    chart = tmp_path / "new" / "mix.png"
    result = CliRunner().invoke(app, ["mix-weights", str(tmp_path / "not_a_pipeline"), "-o", str(chart)])
    assert result.exit_code == 1 and "E511" in result.output and not (tmp_path / "new").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_pipeline(two_depths):
    mode = two_depths.stat().st_mode
    os.chmod(two_depths, 0o555)
    try:
        assert CliRunner().invoke(app, ["mix-weights", str(two_depths)]).exit_code == 0
        result = CliRunner().invoke(app, ["mix-weights", str(two_depths), "-o", str(two_depths / "mix.png")])
        assert result.exit_code == 1 and "E520" in result.output, result.output
        assert not (two_depths / "mix.png").exists()
    finally:
        os.chmod(two_depths, mode)


def test_a_failure_while_writing_keeps_the_old_chart(two_depths, tmp_path, monkeypatch):
    import matplotlib.figure

    chart = tmp_path / "mix.png"
    chart.write_bytes(b"the old chart")

    def fail(self, fname, **kwargs):
        with open(fname, "wb") as f:
            f.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", fail)
    result = CliRunner().invoke(app, ["mix-weights", str(two_depths), "-o", str(chart)])
    assert result.exit_code == 1 and "E520" in result.output and "No space left" in result.output, result.output
    assert chart.read_bytes() == b"the old chart" and files_in(tmp_path) == [chart.relative_to(tmp_path)]


def test_a_mix_without_softmax_weights_is_reported_as_such(fixture_paths, tmp_path):
    from ..pipeline.pipelines import AVERAGE_MIX, pipeline_with

    nlp, examples = pipeline_with({"@layers": AVERAGE_MIX}, *fixture_paths)
    nlp.initialize(lambda: examples)
    nlp.to_disk(tmp_path / "pipeline")
    chart = tmp_path / "mix.png"
    result = CliRunner().invoke(app, ["mix-weights", str(tmp_path / "pipeline"), "-o", str(chart)])
    assert result.exit_code == 0, result.output
    assert "ner: its mix 'test-average-mix' has no softmax layer weights" in result.output
    assert "No chart written" in result.output and not chart.exists()


# Plots every chart the library and the reports draw, after choosing a backend.
PLOT_EVERYTHING = """
import json, sys
from pathlib import Path
import matplotlib
matplotlib.use("svg")
from spacy_elmo.layer_mixes import mean_over_runs, plot_mixes
from experiments.report import comparison, curves
out = Path(sys.argv[1])
plot_mixes({"ner": {"weights": [0.2, 0.3, 0.5], "gamma": 1.0, "upstream": "elmo"}}, out / "one.png")
plot_mixes(mean_over_runs({"ner": [[0.2, 0.3, 0.5], [0.3, 0.3, 0.4]]}), out / "runs.png")
scores = {"ner": {"baseline": {"mean": 50.0, "std": 1.0, "n": 2, "seeds": [49.0, 51.0]}}}
comparison.plot_scores(scores, out / "scores.png")
print(json.dumps([matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules]))
"""


def test_charts_leave_matplotlibs_backend_alone(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parent.parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", PLOT_EVERYTHING, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["svg", False]
    assert all((tmp_path / f"{name}.png").stat().st_size > 1000 for name in ("one", "runs", "scores"))
