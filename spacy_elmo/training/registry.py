"""The registries behind the names a pretraining config gives its parts.

    [corpus]              tokenizer = "spacy-elmo.WhitespaceTokenizer.v1"        pretrain_tokenizers (or a pipeline)
    [softmax]             @pretrain_softmaxes = "spacy-elmo.AdaptiveSoftmax.v1"   pretrain_softmaxes
    [training.optimizer]  @pretrain_optimizers = "spacy-elmo.Adam.v1"             pretrain_optimizers
    [training.schedule]   @pretrain_schedules = "spacy-elmo.linear.v1"            pretrain_schedules

Each name is a function registered under it. A section that names one by its
``@…`` key holds that function's arguments, and confection's
``registry.resolve`` calls it with them, as spaCy resolves its own configs; the
function returns the part, or the factory that builds it once the model
exists. Another package can add names, through these registries' entry-point
groups (``spacy_elmo_pretrain_optimizers`` …) or by decorating a function, e.g.
``@registry.pretrain_optimizers("my-package.AdamW.v1")``; a config then names
it as it names ours. A registered name is never changed once released: a
changed function is registered beside it as ``.v2``.
"""
import catalogue
from confection import registry as _confection_registry

# The registries' names; a section names its function by "@" and the name.
TOKENIZERS, SOFTMAXES, OPTIMIZERS, SCHEDULES = (
    "pretrain_tokenizers", "pretrain_softmaxes", "pretrain_optimizers", "pretrain_schedules"
)


class registry(_confection_registry):
    pretrain_tokenizers = catalogue.create("spacy_elmo", TOKENIZERS, entry_points=True)
    pretrain_softmaxes = catalogue.create("spacy_elmo", SOFTMAXES, entry_points=True)
    pretrain_optimizers = catalogue.create("spacy_elmo", OPTIMIZERS, entry_points=True)
    pretrain_schedules = catalogue.create("spacy_elmo", SCHEDULES, entry_points=True)
