"""``python -m spacy elmo COMMAND``: our commands on spaCy's own CLI.

spaCy imports this module through the ``spacy_cli`` entry point (setup.cfg)
when its CLI starts (``spacy.cli.setup_cli`` loads every registered one), as
spacy-curated-transformers adds its commands; nothing else imports it.
``python -m spacy_elmo COMMAND`` runs the same `app` on its own.
"""

from spacy.cli._util import app as spacy_app

from . import app  # the package: every command added

spacy_app.add_typer(app, name="elmo", help=app.info.help)
