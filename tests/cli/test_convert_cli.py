"""``python -m spacy_elmo convert``: an ELMoForManyLangs model's folder to ours."""

import torch
from typer.testing import CliRunner

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.conversion import load_efml
from spacy_elmo.cli import app

from ..bilm.efml_reference import build_efml_model, efml_importable


def test_convert_writes_a_folder_that_loads_and_never_overwrites(tmp_path):
    with efml_importable(tmp_path / "site"):
        source = build_efml_model(tmp_path / "efml")
    output = tmp_path / "converted"
    result = CliRunner().invoke(app, ["convert", str(source), str(output)])
    assert result.exit_code == 0, result.output
    assert "Converted" in result.output and "12 words" in result.output
    sentence = [["über", "the", "Ж"]]
    with torch.no_grad():
        assert torch.equal(BiLM.from_allennlp(output).encode_words(sentence), load_efml(source).encode_words(sentence))
    again = CliRunner().invoke(app, ["convert", str(source), str(output)])
    assert again.exit_code == 1 and "E202" in again.output
