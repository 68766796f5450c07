"""The parts a pretraining config names are registered functions that confection
resolves: ours all resolve, and one another package registers is named and
trained with as ours are."""
import inspect

import catalogue
import pytest
import torch
from confection import ConfigValidationError

from spacy_elmo.errors import ElmoError
from spacy_elmo.training import PretrainConfig, SoftmaxHead, pretrain
from spacy_elmo.training.data.tokenizers import WHITESPACE, SpacyTokenizer, make_tokenizer
from spacy_elmo.training.pretrain import resolve_parts
from spacy_elmo.training.registry import OPTIMIZERS, SCHEDULES, SOFTMAXES, TOKENIZERS, registry
from spacy_elmo.training.run.optim import Schedule

from .conftest import tiny_settings


def resolved(kind, name, **arguments):
    """The part a section naming `name` of the registry `kind` stands for, as confection resolves it."""
    return registry.resolve({"part": {"@" + kind: name, **arguments}})["part"]


def test_every_registered_name_resolves_into_its_part():
    names = {kind: list(getattr(registry, kind).get_all()) for kind in (TOKENIZERS, SOFTMAXES, OPTIMIZERS, SCHEDULES)}
    assert names[OPTIMIZERS][:3] == ["spacy-elmo.Adam.v1", "spacy-elmo.SGD.v1", "spacy-elmo.Adagrad.v1"]
    assert names[SCHEDULES][:4] == [f"spacy-elmo.{kind}.v1" for kind in ("constant", "linear", "cosine", "plateau")]
    assert names[SOFTMAXES][:2] == ["spacy-elmo.FullSoftmax.v1", "spacy-elmo.AdaptiveSoftmax.v1"]
    assert names[TOKENIZERS][:1] == [WHITESPACE] == ["spacy-elmo.WhitespaceTokenizer.v1"]
    parameters = [torch.nn.Parameter(torch.zeros(3))]
    for name in names[OPTIMIZERS]:
        optimizer = resolved(OPTIMIZERS, name)(parameters)
        assert isinstance(optimizer, torch.optim.Optimizer) and optimizer.defaults["lr"] == 0.001
        for schedule in names[SCHEDULES]:
            ends = "max_steps" in inspect.signature(registry.get(SCHEDULES, schedule)).parameters
            made = resolved(SCHEDULES, schedule, **({"max_steps": 10} if ends else {}))(optimizer)
            assert isinstance(made, Schedule) and schedule == f"spacy-elmo.{made.built_for['schedule.name']}.v1"
    for name in names[SOFTMAXES]:
        head = resolved(SOFTMAXES, name, **({"cutoffs": [4]} if "Adaptive" in name else {}))(8, 10)
        assert isinstance(head, SoftmaxHead) and name == f"spacy-elmo.{head.kind.capitalize()}Softmax.v1"
    assert list(make_tokenizer(WHITESPACE)(["a  b", "", "c"])) == [["a", "b"], ["c"]]
    # Any other name is a spaCy pipeline, loaded only when first needed.
    spacy_tokenizer = make_tokenizer("blank:en")
    assert isinstance(spacy_tokenizer, SpacyTokenizer) and spacy_tokenizer._nlp is None


def test_the_unversioned_tokenizer_name_is_an_unknown_tokenizer():
    with pytest.raises(ElmoError, match=rf"E323.*'whitespace'.*registered tokenizers \('{WHITESPACE}'\)"):
        make_tokenizer("whitespace")


def test_a_section_is_filled_in_from_the_defaults_of_the_function_it_names(tmp_path):
    settings = tiny_settings(tmp_path / "train.txt", softmax={"@" + SOFTMAXES: "spacy-elmo.AdaptiveSoftmax.v1"},
                             training={"schedule": {"@" + SCHEDULES: "spacy-elmo.plateau.v1", "decay": 0.25}})
    config = PretrainConfig.from_dict(settings)
    assert config.to_dict()["softmax"] == {"@pretrain_softmaxes": "spacy-elmo.AdaptiveSoftmax.v1",
                                           "cutoffs": [4000, 20000], "div_value": 4.0}
    assert config.to_dict()["training"]["schedule"] == {"@pretrain_schedules": "spacy-elmo.plateau.v1",
                                                        "warmup_steps": 0, "decay": 0.25, "min_improvement": 0.0}
    assert config.to_dict()["training"]["optimizer"]["@pretrain_optimizers"] == "spacy-elmo.Adam.v1"
    assert PretrainConfig.from_dict(config.to_dict()) == config
    # The caller's sections are not changed.
    assert settings["training"]["schedule"] == {"@pretrain_schedules": "spacy-elmo.plateau.v1", "decay": 0.25}


@pytest.fixture
def adamw():
    """An optimiser another package registers, with no defaults: its section gives every argument."""
    made = []

    @registry.pretrain_optimizers("test-adamw")
    def make(learn_rate: float, weight_decay: float):
        def factory(params):
            made.append(torch.optim.AdamW(params, lr=learn_rate, weight_decay=weight_decay))
            return made[-1]

        return factory

    yield made
    catalogue._remove(("spacy_elmo", "pretrain_optimizers", "test-adamw"))


def test_a_registered_optimiser_is_named_in_the_config_and_trains(tmp_path, tiny_config, adamw):
    optimizer = {"@pretrain_optimizers": "test-adamw", "learn_rate": 0.01, "weight_decay": 0.5}
    config = tiny_config(training={"max_steps": 2, "optimizer": optimizer})
    parts = resolve_parts(config)
    assert adamw == []  # resolved into a factory; nothing is built before the model exists
    result = pretrain(config, tmp_path / "run", progress=False)
    assert result.state.step == 2 and len(adamw) == 1
    assert adamw[0].defaults["weight_decay"] == 0.5
    assert callable(parts.optimizer) and callable(parts.schedule)


def test_a_registered_function_that_wants_a_setting_its_section_lacks_is_a_config_error(tmp_path):
    @registry.pretrain_schedules("test-needs")
    def needs(warmup_steps: int, gamma: float):
        raise AssertionError("not called")

    settings = tiny_settings(tmp_path / "train.txt",
                             training={"schedule": {"@pretrain_schedules": "test-needs", "warmup_steps": 2}})
    try:
        with pytest.raises(ConfigValidationError) as err:
            PretrainConfig.from_dict(settings)
    finally:
        catalogue._remove(("spacy_elmo", "pretrain_schedules", "test-needs"))
    assert err.value.title.startswith("[E313]")
    errors = {" -> ".join(e["loc"]): e["msg"] for e in err.value.errors}
    assert errors == {"training -> schedule -> gamma": "missing: 'test-needs' takes it and has no default for it"}
