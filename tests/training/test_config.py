import pytest
from confection import ConfigValidationError

from spacy_elmo.training import PretrainConfig, load_config

CONFIG = """
[paths]
train = "corpus/train.txt"

[model]
lstm_dim = 64
projection_dim = 16

[training]
max_steps = 10

[training.optimizer]
learn_rate = 0.01
"""


def write(tmp_path, text):
    path = tmp_path / "bilm.cfg"
    path.write_text(text, encoding="utf8")
    return path


def test_left_out_settings_take_defaults_and_any_can_be_overridden(tmp_path):
    config = load_config(write(tmp_path, CONFIG), {"system.seed": 7, "softmax.@pretrain_softmaxes": "spacy-elmo.FullSoftmax.v1"})
    assert config.model.lstm_dim == 64 and config.model.n_layers == 2
    assert config.system.seed == 7 and config.softmax.kind == "spacy-elmo.FullSoftmax.v1"
    assert config.training.optimizer.learn_rate == 0.01
    assert PretrainConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    "text, location, message",
    [
        (CONFIG.replace("learn_rate", "learn_rat"), "training -> optimizer -> learn_rat", "did you mean 'learn_rate'"),
        (CONFIG + "lear_rate = 1\n", "training -> optimizer -> lear_rate", "did you mean 'learn_rate'"),
        (CONFIG.replace("max_steps", "max_step"), "training -> max_step", "did you mean 'max_steps'"),
        (CONFIG.replace("[model]", "[modle]"), "modle", "did you mean 'model'"),
        (CONFIG.replace("max_steps = 10", 'max_steps = "ten"'), "training -> max_steps", "expected a valid integer; found 'ten'"),
        (CONFIG.replace("lstm_dim = 64", "lstm_dim = -3"), "model", "lstm.dim"),
        (CONFIG + "[softmax]\n@pretrain_softmaxes = \"sampled\"\n", "softmax -> @pretrain_softmaxes",
         "expected 'spacy-elmo.FullSoftmax.v1' or 'spacy-elmo.AdaptiveSoftmax.v1'; found 'sampled'"),
        (CONFIG + "@pretrain_optimizers = \"adamw\"\n", "training -> optimizer -> @pretrain_optimizers",
         "expected 'spacy-elmo.Adam.v1', 'spacy-elmo.SGD.v1' or 'spacy-elmo.Adagrad.v1'; found 'adamw'"),
        (CONFIG + "name = \"adamw\"\n", "training -> optimizer -> @pretrain_optimizers", "found 'adamw'"),
        (CONFIG + "[training.schedule]\n@pretrain_schedules = \"step\"\n", "training -> schedule -> @pretrain_schedules",
         "expected 'spacy-elmo.constant.v1', 'spacy-elmo.linear.v1', 'spacy-elmo.cosine.v1' or 'spacy-elmo.plateau.v1'; "
         "found 'step'"),
        (CONFIG + "name = \"adam\"\n@pretrain_optimizers = \"spacy-elmo.Adam.v1\"\n", "training -> optimizer -> name",
         "the old key of @pretrain_optimizers, which the section has too: keep only @pretrain_optimizers"),
        (CONFIG.replace("learn_rate = 0.01", "learn_rate = 0"), "training -> optimizer -> learn_rate", "expected greater than 0; found 0"),
        (CONFIG.replace('train = "corpus/train.txt"', "train = null"), "paths -> train", "no training text"),
        (CONFIG + "[training.schedule]\n@pretrain_schedules = \"spacy-elmo.linear.v1\"\n", "training", "needs max_steps > 0"),
    ],
)
def test_a_wrong_setting_is_a_clear_config_error(tmp_path, text, location, message):
    with pytest.raises(ConfigValidationError) as err:
        load_config(write(tmp_path, text), {"training.max_steps": 0, "training.max_epochs": 1} if "linear" in text else None)
    assert err.value.title.startswith("[E313] The pretraining config") and "bilm.cfg" in err.value.title
    errors = {" -> ".join(e["loc"]): e["msg"] for e in err.value.errors}
    assert location in errors and message in errors[location], errors


def test_an_override_of_an_unknown_section_is_refused(tmp_path):
    with pytest.raises(ConfigValidationError, match="trainig"):
        load_config(write(tmp_path, CONFIG), {"trainig.max_steps": 3})


def test_the_shipped_configs_are_valid():
    from pathlib import Path

    configs = Path(__file__).parents[2] / "configs"
    for name in ("bilm_demo.cfg", "bilm_small.cfg", "bilm_ptb.cfg"):
        config = load_config(configs / name, {"paths.train": "corpus/train.txt"})
        assert config.model.n_layers >= 1


LEGACY = CONFIG + """
[softmax]
kind = "full"

[training.schedule]
name = "cosine"
warmup_steps = 2
"""


def test_a_config_in_the_unversioned_names_reads_as_the_versioned_one(tmp_path):
    new = (LEGACY.replace('kind = "full"', '@pretrain_softmaxes = "spacy-elmo.FullSoftmax.v1"')
           .replace('name = "cosine"', '@pretrain_schedules = "spacy-elmo.cosine.v1"'))
    old_config, new_config = load_config(write(tmp_path, LEGACY)), load_config(write(tmp_path, new))
    assert old_config == new_config and old_config.training.schedule.name == "spacy-elmo.cosine.v1"
    assert "name" not in old_config.to_dict()["training"]["optimizer"]
    assert old_config.to_dict()["training"]["optimizer"]["@pretrain_optimizers"] == "spacy-elmo.Adam.v1"
    # An override in the old spelling too.
    overridden = load_config(write(tmp_path, new), {"training.optimizer.name": "sgd", "softmax.kind": "adaptive"})
    assert overridden.training.optimizer.name == "spacy-elmo.SGD.v1"
    assert overridden.softmax.kind == "spacy-elmo.AdaptiveSoftmax.v1"


def test_a_section_naming_another_function_still_takes_the_default_settings(tmp_path):
    # confection merges no defaults into a section whose function differs from the
    # defaults'; every setting of it must still be there to override.
    text = CONFIG + '@pretrain_optimizers = "spacy-elmo.SGD.v1"\n'
    config = load_config(write(tmp_path, text), {"training.optimizer.momentum": 0.9})
    assert config.training.optimizer.name == "spacy-elmo.SGD.v1" and config.training.optimizer.momentum == 0.9
