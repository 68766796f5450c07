"""spacy-elmo: ELMo contextual representations for spaCy v3 pipelines.

Importing the package, or its pure-PyTorch core `spacy_elmo.bilm`, imports
neither spaCy nor Thinc. spaCy finds the `elmo` factory and the architectures
through the package's entry points (setup.cfg); building the component or a
listener registers ``Doc._.elmo`` and the ``elmo_vector`` getters, and srsly
finds the msgpack encoders that let ``doc._.elmo`` travel in a ``DocBin``
through its own entry points. `install_extensions()` registers the
extensions by hand, e.g. to read ``doc._.elmo`` from a ``DocBin`` without
loading a pipeline.
"""

__version__ = "0.1.1"


def install_extensions() -> None:
    """Register ``Doc._.elmo`` and the ``elmo_vector`` getters (safe to call
    more than once). Imports spaCy."""
    from .extensions import install_extensions as install

    install()
