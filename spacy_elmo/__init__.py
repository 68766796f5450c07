"""spacy-elmo: ELMo contextual representations for spaCy v3 pipelines.

Importing the package registers ``Doc._.elmo`` (and the ``elmo_vector``
getters) and the msgpack encoders that let ``doc._.elmo`` travel in a
``DocBin``; the `elmo` factory and the architectures are found by spaCy
through the package's entry points.
"""
from . import data_classes  # noqa: F401  (msgpack encoders for doc._.elmo)
from .extensions import install_extensions

__version__ = "0.1.0"

install_extensions()
