"""Moved to `spacy_elmo.training.run.checkpoint`; importing from here still works, with a DeprecationWarning."""
from .._deprecated import moved

__getattr__, __dir__ = moved(__name__, "spacy_elmo.training.run.checkpoint")
