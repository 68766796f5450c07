"""The registries behind the names a pretraining config gives its parts.

    [corpus]              tokenizer = "whitespace"                                 pretrain_tokenizers (or a spaCy pipeline)
    [softmax]             @pretrain_softmaxes = "spacy-elmo.AdaptiveSoftmax.v1"     pretrain_softmaxes
    [training.optimizer]  @pretrain_optimizers = "spacy-elmo.Adam.v1"               pretrain_optimizers
    [training.schedule]   @pretrain_schedules = "spacy-elmo.linear.v1"              pretrain_schedules

Each name is a function registered under it, called with the settings of its
section that it names as parameters (a schedule may also name ``max_steps``,
from ``[training]``); it returns the part, or the factory that builds it once
the model exists. `spacy_elmo.training.pretrain` resolves them once, at the
start of a run. Another package can add names, through these registries'
entry-point groups (``spacy_elmo_pretrain_optimizers`` …) or by decorating a
function, e.g. ``@registry.pretrain_optimizers("my-package.AdamW.v1")``; a
config then names it as it names ours. A registered name is never changed once
released: a changed function is registered beside it as ``.v2``.
"""
import importlib
import inspect
from typing import Any, Dict, List

import catalogue
from confection import registry as _confection_registry


class registry(_confection_registry):
    pretrain_tokenizers = catalogue.create("spacy_elmo", "pretrain_tokenizers", entry_points=True)
    pretrain_softmaxes = catalogue.create("spacy_elmo", "pretrain_softmaxes", entry_points=True)
    pretrain_optimizers = catalogue.create("spacy_elmo", "pretrain_optimizers", entry_points=True)
    pretrain_schedules = catalogue.create("spacy_elmo", "pretrain_schedules", entry_points=True)


# The registries' names, as `registered`, `is_registered` and `build` take them.
TOKENIZERS, SOFTMAXES, OPTIMIZERS, SCHEDULES = (
    "pretrain_tokenizers", "pretrain_softmaxes", "pretrain_optimizers", "pretrain_schedules"
)

# The names before they were versioned, which configs and run folders written
# then still use: each is read as its versioned name (run/config.py).
LEGACY_NAMES = {
    SOFTMAXES: {"full": "spacy-elmo.FullSoftmax.v1", "adaptive": "spacy-elmo.AdaptiveSoftmax.v1"},
    OPTIMIZERS: {"adam": "spacy-elmo.Adam.v1", "sgd": "spacy-elmo.SGD.v1", "adagrad": "spacy-elmo.Adagrad.v1"},
    SCHEDULES: {
        "constant": "spacy-elmo.constant.v1", "linear": "spacy-elmo.linear.v1",
        "cosine": "spacy-elmo.cosine.v1", "plateau": "spacy-elmo.plateau.v1",
    },
}

# The modules whose functions fill the registries above, imported on first use.
_OURS = ("spacy_elmo.training.data.tokenizers", "spacy_elmo.training.objective.softmax", "spacy_elmo.training.run.optim")


def registered(kind: str) -> List[str]:
    """The names in the registry `kind` ("pretrain_optimizers" …), ours first."""
    _load_ours()
    return list(getattr(registry, kind).get_all())


def is_registered(kind: str, name: str) -> bool:
    _load_ours()
    return name in getattr(registry, kind)


def build(kind: str, name: str, settings: Dict[str, Any]) -> Any:
    """Call the function registered as `name` in `kind` with those of
    `settings` that it takes. A ValueError says which setting does not suit it."""
    _load_ours()
    func = getattr(registry, kind).get(name)
    params = inspect.signature(func).parameters
    missing = [p for p, spec in params.items() if p not in settings and spec.default is inspect.Parameter.empty
               and spec.kind not in (spec.VAR_POSITIONAL, spec.VAR_KEYWORD)]
    if missing:
        raise ValueError(f"the registered function '{name}' ({kind}) takes {', '.join(missing)}, "
                         f"which its section does not have (it has: {', '.join(settings)})")
    return func(**{key: value for key, value in settings.items() if key in params})


def _load_ours() -> None:
    for module in _OURS:
        importlib.import_module(module)
