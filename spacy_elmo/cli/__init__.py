"""The command line: ``python -m spacy_elmo COMMAND`` (or ``spacy-elmo COMMAND``).

`app` (app.py) with every command: each command module adds its own when
imported here. The functions the commands wrap are plain Python, callable from
tests.
"""

from . import convert, embed, export, mix_weights, models, perplexity, pretrain  # noqa: F401 (they add the commands)
from .app import app

__all__ = ["app"]
