"""The parts a pretraining config names are registered functions: ours all
resolve, and one another package registers is named and trained with as ours are."""
import catalogue
import pytest
import torch
from confection import ConfigValidationError

from spacy_elmo.training import PretrainConfig, SoftmaxHead, pretrain
from spacy_elmo.training.data.tokenizers import SpacyTokenizer, make_tokenizer
from spacy_elmo.training.pretrain import resolve_parts
from spacy_elmo.training.registry import build, registered, registry
from spacy_elmo.training.run.config import OptimizerSettings, ScheduleSettings, SoftmaxSettings
from spacy_elmo.training.run.optim import Schedule

from .conftest import tiny_settings


def section(settings, **extra):
    values = settings.model_dump()  # by the fields' names: the function's is "name" or "kind"
    values.pop("name", None), values.pop("kind", None)
    return {**values, **extra}


def test_every_registered_name_resolves_into_its_part():
    assert registered("pretrain_optimizers")[:3] == ["spacy-elmo.Adam.v1", "spacy-elmo.SGD.v1", "spacy-elmo.Adagrad.v1"]
    assert registered("pretrain_schedules")[:4] == [f"spacy-elmo.{kind}.v1" for kind in ("constant", "linear", "cosine", "plateau")]
    assert registered("pretrain_softmaxes")[:2] == ["spacy-elmo.FullSoftmax.v1", "spacy-elmo.AdaptiveSoftmax.v1"]
    assert "whitespace" in registered("pretrain_tokenizers")
    parameters = [torch.nn.Parameter(torch.zeros(3))]
    for name in registered("pretrain_optimizers"):
        optimizer = build("pretrain_optimizers", name, section(OptimizerSettings()))(parameters)
        assert isinstance(optimizer, torch.optim.Optimizer) and optimizer.defaults["lr"] == 0.001
        for schedule in registered("pretrain_schedules"):
            made = build("pretrain_schedules", schedule, section(ScheduleSettings(), max_steps=10))(optimizer)
            assert isinstance(made, Schedule) and schedule == f"spacy-elmo.{made.built_for['schedule.name']}.v1"
    for name in registered("pretrain_softmaxes"):
        head = build("pretrain_softmaxes", name, section(SoftmaxSettings(cutoffs=[4])))(8, 10)
        assert isinstance(head, SoftmaxHead) and name == f"spacy-elmo.{head.kind.capitalize()}Softmax.v1"
    assert list(make_tokenizer("whitespace")(["a  b", "", "c"])) == [["a", "b"], ["c"]]
    # Any other name is a spaCy pipeline, loaded only when first needed.
    spacy_tokenizer = make_tokenizer("blank:en")
    assert isinstance(spacy_tokenizer, SpacyTokenizer) and spacy_tokenizer._nlp is None


@pytest.fixture
def adamw():
    """An optimiser another package registers, taking some of the section's settings."""
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
    config = tiny_config(training={"max_steps": 2, "optimizer": {"@pretrain_optimizers": "test-adamw", "weight_decay": 0.5}})
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

    settings = tiny_settings(tmp_path / "train.txt", training={"schedule": {"@pretrain_schedules": "test-needs"}})
    try:
        with pytest.raises(ConfigValidationError) as err:
            PretrainConfig.from_dict(settings)
    finally:
        catalogue._remove(("spacy_elmo", "pretrain_schedules", "test-needs"))
    assert err.value.title.startswith("[E313]")
    assert "'test-needs' (pretrain_schedules) takes gamma, which its section does not have" in str(err.value)
