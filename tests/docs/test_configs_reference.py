"""docs/configs.md is the code's own account of its settings: written by
tests/docs/configs_reference.py, checked here so that it cannot drift."""

from pathlib import Path

from spacy.language import Language

from .configs_reference import ELMO_SETTINGS, render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configs.md"


def test_the_page_is_what_the_code_says():
    assert PAGE.read_text(encoding="utf8") == render(), (
        "docs/configs.md differs from the code: PYTHONPATH=. python -m tests.docs.configs_reference > docs/configs.md"
    )


def test_every_setting_of_the_elmo_factory_is_described():
    import spacy_elmo.pipeline  # noqa: F401

    assert set(ELMO_SETTINGS) == set(Language.get_factory_meta("elmo").default_config)


def test_every_registered_name_is_on_the_page():
    from spacy.util import registry

    import spacy_elmo.models  # noqa: F401
    from spacy_elmo.training.registry import OPTIMIZERS, SCHEDULES, SOFTMAXES
    from spacy_elmo.training.registry import registry as pretrain_registry

    text = PAGE.read_text(encoding="utf8")
    ours = [
        name
        for reg in (registry.architectures, registry.layers, registry.misc)
        for name in reg.get_all()
        if name.startswith("spacy-elmo.")
    ]
    ours += [name for kind in (SOFTMAXES, OPTIMIZERS, SCHEDULES) for name in getattr(pretrain_registry, kind).get_all()]
    assert ours and all(f"`{name}`" in text for name in ours), [n for n in ours if f"`{n}`" not in text]
