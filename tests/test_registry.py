"""Every name declared in setup.cfg resolves to the object it points at."""

import configparser
import importlib
import re
from pathlib import Path

import pytest
from spacy.language import Language
from spacy.util import registry

SETUP_CFG = Path(__file__).parent.parent / "setup.cfg"


def entry_points():
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    for group, block in parser["options.entry_points"].items():
        for line in block.strip().splitlines():
            name, target = (part.strip() for part in line.split("=", 1))
            yield group, name, target


def load(target):
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


REGISTRIES = {
    "spacy_architectures": registry.architectures,
    "thinc_layers": registry.layers,
    "spacy_misc": registry.misc,
}


@pytest.mark.parametrize("group,name,target", list(entry_points()))
def test_entry_point_resolves(group, name, target):
    obj = load(target)
    if group == "spacy_factories":
        assert Language.has_factory(name)
        assert Language.get_factory_meta(name).factory == name
    elif group in REGISTRIES:
        assert REGISTRIES[group].get(name) is obj
    elif group == "spacy_cli":  # our typer app, added to spaCy's under this name
        from spacy.cli._util import app as spacy_app

        assert any(g.typer_instance is obj and g.name == name for g in spacy_app.registered_groups)
    elif group in ("srsly_msgpack_encoders", "srsly_msgpack_decoders"):  # how a DocBin reads doc._.elmo
        import srsly.msgpack

        assert getattr(srsly.msgpack, group.replace("srsly_", "")).get(name) is obj
    else:
        assert group == "console_scripts" and callable(obj)


def test_every_registered_name_is_declared():
    declared = {name for _, name, _ in entry_points()}
    import spacy_elmo.models  # noqa: F401  (registers everything)

    for reg in REGISTRIES.values():
        ours = {name for name in reg.get_all() if name.startswith("spacy-elmo.")}
        assert ours <= declared


def test_every_pretraining_name_of_ours_is_versioned():
    from spacy_elmo.training.registry import OPTIMIZERS, SCHEDULES, SOFTMAXES, TOKENIZERS
    from spacy_elmo.training.registry import registry as pretraining

    kinds = (TOKENIZERS, SOFTMAXES, OPTIMIZERS, SCHEDULES)
    names = [name for kind in kinds for name in getattr(pretraining, kind).get_all()]
    assert len(names) >= 10 and all(re.fullmatch(r"spacy-elmo\.\w+\.v\d+", name) for name in names), names
