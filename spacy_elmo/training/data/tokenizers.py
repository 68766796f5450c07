"""Lines of text to sentences of token strings, as the pipeline will see them.

``corpus.tokenizer`` names a function of ``registry.pretrain_tokenizers``
(training/registry.py), which confection resolves into the tokenizer, or else a
spaCy pipeline.

``"spacy-elmo.WhitespaceTokenizer.v1"`` reads pre-tokenised text: each line is
one sentence, its tokens split on whitespace (the Penn Treebank files are
written so). Any other name is a spaCy pipeline (``"blank:en"``, an installed
package or a path): a line is one doc, its tokens are ``token.text`` exactly
as the pipeline makes them, and its sentences are ``doc.sents``; a sentencizer
is added when the pipeline sets no sentence boundaries of its own. A name that
is none of these is E323 as soon as the tokenizer is made.
"""
import difflib
from pathlib import Path
from typing import Callable, Iterable, Iterator, List

from ...errors import ConfigError
from ..registry import TOKENIZERS, registry

Sentences = Iterator[List[str]]
Tokenizer = Callable[[Iterable[str]], Sentences]

WHITESPACE = "spacy-elmo.WhitespaceTokenizer.v1"
_SENTENCE_SETTERS = ("sentencizer", "senter", "parser")


def make_tokenizer(name: str, batch_size: int = 256) -> Tokenizer:
    """The tokenizer `name` names: a registered one, resolved by confection, or
    else the spaCy pipeline of that name (loaded when the tokenizer is first
    called, so that a run that finds its corpus already prepared never loads it)."""
    if registry.has(TOKENIZERS, name):
        return registry.resolve({TOKENIZERS: {"@" + TOKENIZERS: name}})[TOKENIZERS]
    return SpacyTokenizer(name, batch_size)


@registry.pretrain_tokenizers(WHITESPACE)
def whitespace() -> Tokenizer:
    """One sentence a line, its tokens split on whitespace."""
    return _whitespace_sentences


def _whitespace_sentences(lines: Iterable[str]) -> Sentences:
    for line in lines:
        words = line.split()
        if words:
            yield words


class SpacyTokenizer:
    """A spaCy pipeline's tokens and sentences: ``"blank:LANG"``, an installed package or a path."""

    def __init__(self, name: str, batch_size: int = 256):
        check_pipeline_name(name)
        self.name = name
        self.batch_size = batch_size
        self._nlp = None

    def __call__(self, lines: Iterable[str]) -> Sentences:
        if self._nlp is None:
            self._nlp = _load_pipeline(self.name)
        for doc in self._nlp.pipe(lines, batch_size=self.batch_size):
            for sent in doc.sents:
                if len(sent):
                    yield [token.text for token in sent]


def check_pipeline_name(name: str) -> None:
    """E323 unless spaCy can load the pipeline `name` names: a language it has
    (``"blank:LANG"``), an installed package or a path that exists. Checked
    when the tokenizer is made (before a run's folder is touched), without
    loading the pipeline."""
    import spacy.util

    if name.startswith("blank:"):
        lang = name[len("blank:"):]
        try:
            spacy.util.get_lang_class(lang)
            return
        except ImportError:
            reason = f"spaCy has no language '{lang}'"
    elif spacy.util.is_package(name) or Path(name).exists():
        return
    else:
        reason = "it is not a registered tokenizer, an installed spaCy pipeline package or a path that exists"
    names = list(registry.pretrain_tokenizers.get_all())
    close = difflib.get_close_matches(name, names, n=1)
    raise ConfigError("E323", found=name, reason=reason, registered=", ".join(repr(n) for n in names),
                      suggestion=f"; did you mean {close[0]!r}?" if close else "")


def _load_pipeline(name: str):
    import spacy

    if name.startswith("blank:"):
        nlp = spacy.blank(name[len("blank:"):])
    else:
        # Only the tokenizer and whatever sets sentence boundaries are needed.
        nlp = spacy.load(name)
        keep = [n for n in nlp.pipe_names if n in _SENTENCE_SETTERS or n in ("tok2vec",)]
        nlp.select_pipes(enable=keep)
    if not any(n in _SENTENCE_SETTERS for n in nlp.pipe_names):
        nlp.add_pipe("sentencizer")
    # Lines are read in pieces of bounded size; this limit is not the one that matters.
    nlp.max_length = max(nlp.max_length, 2_000_000)
    return nlp
