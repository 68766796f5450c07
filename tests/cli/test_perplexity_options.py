"""`perplexity`'s options are checked before anything is loaded."""

import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_batch_of_fewer_than_one_token_is_a_usage_error(tmp_path, value):
    text = tmp_path / "eval.txt"
    text.write_text("the cat sat .\n")
    # tmp_path is no model: the option is refused before the model is looked at.
    result = CliRunner().invoke(
        app, ["perplexity", str(tmp_path), str(text), "--tokens-per-batch", value], env={"COLUMNS": "200"}
    )  # the whole message on one line
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--tokens-per-batch'" in result.output, result.output
