import copy

import pytest
import spacy
import typer
from typer.testing import CliRunner

from experiments.report import layer_weights

from ..pipeline.pipelines import NER_ELMO
from ..pipeline.util import examples_of, make_docs


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, fixture_paths):
    """A run of two seeds, each an elmo + ner pipeline in seedN/model-best."""
    root = tmp_path_factory.mktemp("runs") / "ner_elmo"
    for seed in (0, 1):
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo")
        nlp.add_pipe("ner", config={"model": copy.deepcopy(NER_ELMO)})
        nlp.config["initialize"]["components"]["elmo"] = {
            "options_file": str(fixture_paths[0]),
            "weights_file": str(fixture_paths[1]),
        }
        examples = examples_of(nlp, make_docs(nlp, 4))
        nlp.initialize(lambda: examples)
        (root / f"seed{seed}").mkdir(parents=True)
        nlp.to_disk(root / f"seed{seed}" / "model-best")
    return root


def test_mean_weights_of_the_seeds_and_a_chart(run_dir, tmp_path):
    app = typer.Typer()
    app.command()(layer_weights.main)
    output = tmp_path / "plots" / "weights.png"
    result = CliRunner().invoke(app, [str(output), str(run_dir)])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("| ner_elmo"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    means = [float(cell.split("±")[0]) for cell in cells[1:-2]]
    assert len(means) == 3 and sum(means) == pytest.approx(1.0, abs=2e-3)  # softmax(s), printed to 3 places
    assert cells[-1] == "2"
    assert output.stat().st_size > 0


def test_a_run_without_models_says_how_to_make_them(tmp_path):
    (tmp_path / "empty" / "seed0").mkdir(parents=True)
    with pytest.raises(typer.BadParameter, match="no seed\\*/model-best"):
        layer_weights.run_mixes(tmp_path / "empty")
