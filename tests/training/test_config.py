import pytest
from confection import ConfigValidationError

from spacy_elmo.training import PretrainConfig, load_config

LINEAR = """
[training.schedule]
@pretrain_schedules = "spacy-elmo.linear.v1"
max_steps = ${training.max_steps}
"""
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
    assert config.system.seed == 7 and config.softmax.function == "spacy-elmo.FullSoftmax.v1"
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
        (CONFIG + "momentum = 0.9\n", "training -> optimizer -> momentum",
         "unknown setting (expected one of: learn_rate"),
        (CONFIG + "[training.schedule]\n@pretrain_schedules = \"step\"\n", "training -> schedule -> @pretrain_schedules",
         "expected 'spacy-elmo.constant.v1', 'spacy-elmo.linear.v1', 'spacy-elmo.cosine.v1' or 'spacy-elmo.plateau.v1'; "
         "found 'step'"),
        (CONFIG.replace("learn_rate = 0.01", "learn_rate = 0"), "training -> optimizer -> learn_rate", "expected greater than 0; found 0"),
        (CONFIG + "[softmax]\ncutoffs = [8, 4]\n", "softmax -> cutoffs",
         "must be positive and increasing; found [8, 4]"),
        (CONFIG + "[training.schedule]\n@pretrain_schedules = \"spacy-elmo.plateau.v1\"\ndecay = 1.5\n",
         "training -> schedule -> decay", "expected less than or equal to 1; found 1.5"),
        (CONFIG.replace('train = "corpus/train.txt"', "train = null"), "paths -> train", "no training text"),
        (CONFIG + "[training.schedule]\n@pretrain_schedules = \"spacy-elmo.linear.v1\"\n",
         "training -> schedule -> max_steps", "missing: 'spacy-elmo.linear.v1' takes it and has no default for it"),
        (CONFIG + LINEAR, "training -> schedule -> max_steps", "must be above 0: the decay ends at this step"),
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

    configs = sorted((Path(__file__).parents[2] / "configs").glob("bilm_*.cfg"))
    assert len(configs) >= 5
    for path in configs:
        config = load_config(path, {"paths.train": "corpus/train.txt"})
        assert config.model.n_layers >= 1


def test_a_decay_ends_where_the_run_does_whatever_max_steps_it_is_given():
    from pathlib import Path

    demo = Path(__file__).parents[2] / "configs" / "bilm_demo.cfg"
    config = load_config(demo, {"paths.train": "corpus/train.txt", "training.max_steps": 1234})
    assert config.training.schedule.function == "spacy-elmo.linear.v1"
    assert config.training.schedule.max_steps == config.training.max_steps == 1234


@pytest.mark.parametrize("section, old", [
    ("[softmax]", 'kind = "full"'), ("[training.optimizer]", 'name = "adam"'),
    ("[training.schedule]", 'name = "cosine"'),
])
def test_a_part_named_by_an_unversioned_name_is_an_unknown_setting(tmp_path, section, old):
    text = CONFIG + (f"{old}\n" if section == "[training.optimizer]" else f"\n{section}\n{old}\n")
    with pytest.raises(ConfigValidationError) as err:
        load_config(write(tmp_path, text))
    location = " -> ".join([*section.strip("[]").split("."), old.split()[0]])
    errors = {" -> ".join(e["loc"]): e["msg"] for e in err.value.errors}
    assert list(errors) == [location] and errors[location].startswith("unknown setting"), errors


def test_a_section_naming_another_function_takes_that_functions_defaults(tmp_path):
    # confection merges no defaults into a section whose function differs from the defaults':
    # the section is filled in from the function it names, and any of its settings can be overridden.
    text = CONFIG + '@pretrain_optimizers = "spacy-elmo.SGD.v1"\n'
    config = load_config(write(tmp_path, text), {"training.optimizer.momentum": 0.9})
    assert config.to_dict()["training"]["optimizer"] == {
        "@pretrain_optimizers": "spacy-elmo.SGD.v1", "learn_rate": 0.01, "momentum": 0.9, "weight_decay": 0.0,
    }
