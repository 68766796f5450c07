"""Bad arguments to the commands: coded errors, never bare tracebacks."""

import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.training import PretrainConfig

from ..training.conftest import tiny_settings, write_corpus


def test_mix_weights_on_a_folder_that_is_not_a_pipeline(tmp_path):
    result = CliRunner().invoke(app, ["mix-weights", str(tmp_path)])
    assert result.exit_code == 1 and "E511" in result.output and "config.cfg" in result.output
    (tmp_path / "config.cfg").write_text('[nlp]\nlang = "xx-nope"\npipeline = ["x"]\n')
    result = CliRunner().invoke(app, ["mix-weights", str(tmp_path)])
    assert result.exit_code == 1 and "E511" in result.output, result.output


@pytest.mark.parametrize("device", ["potato", "cuda:99"])
def test_pretrain_with_a_device_that_cannot_be_used(tmp_path, device):
    config = tmp_path / "bilm.cfg"
    PretrainConfig.from_dict(tiny_settings(write_corpus(tmp_path / "train.txt", 20))).to_config().to_disk(config)
    result = CliRunner().invoke(app, ["pretrain", str(config), str(tmp_path / "run"), "--device", device])
    assert result.exit_code == 1 and "E509" in result.output, result.output
    assert not (tmp_path / "run").exists()
