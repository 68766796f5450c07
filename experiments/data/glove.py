"""GloVe (``assets/glove`` from ``fetch_data.py --only glove``) as spaCy vectors.

Writes a blank English pipeline whose vocabulary holds the 400,000 GloVe 6B 50d
vectors, keyed by the token's ``LOWER`` attribute (GloVe 6B is lowercased), for
a config's ``[initialize] vectors`` with ``include_static_vectors = true``:

    python -m experiments.data.glove assets/glove corpus/curves/glove
    python -m spacy train configs/ner_baseline.cfg --paths.vectors corpus/curves/glove \\
        --components.ner.model.tok2vec.embed.include_static_vectors true ...

``--keep-words-of DOCS.spacy`` (repeatable) keeps only the rows of words that
occur (lowercased) in those docs: a table that gives every one of those docs
exactly the vectors the full table gives (a word the docs don't hold is never
looked up), small enough to copy to another machine.
"""

from pathlib import Path
from typing import Annotated, List, Optional

import numpy
import spacy
import typer
from spacy.tokens import DocBin
from spacy.vectors import Vectors


def read_glove(glove_dir: Path) -> tuple[list[str], numpy.ndarray]:
    words = (glove_dir / "words.txt").read_text(encoding="utf-8").split("\n")[:-1]
    vectors = numpy.load(glove_dir / "vectors.npy", allow_pickle=False)
    if vectors.shape[0] != len(words):
        raise ValueError(f"{glove_dir}: {len(words):,} words but {vectors.shape[0]:,} vectors")
    return words, vectors


def words_of(paths: List[Path]) -> set[str]:
    nlp = spacy.blank("en")
    return {token.lower_ for path in paths for doc in DocBin().from_disk(path).get_docs(nlp.vocab) for token in doc}


def glove_pipeline(words: list[str], vectors: numpy.ndarray, keep: Optional[set[str]] = None):
    """A blank English pipeline with these vectors, looked up by LOWER."""
    if keep is not None:
        rows = [i for i, word in enumerate(words) if word in keep]
        words, vectors = [words[i] for i in rows], vectors[rows]
    nlp = spacy.blank("en")
    keys = [nlp.vocab.strings.add(word) for word in words]
    nlp.vocab.vectors = Vectors(
        strings=nlp.vocab.strings,
        data=numpy.ascontiguousarray(vectors, dtype="float32"),
        keys=keys,
        attr="LOWER",
        name="glove_6B_50d",
    )
    return nlp


def main(
    glove_dir: Annotated[Path, typer.Argument(help="assets/glove: vectors.npy and words.txt")],
    output_dir: Annotated[Path, typer.Argument(help="Where to write the pipeline with the vectors")],
    keep_words_of: Annotated[
        Optional[List[Path]], typer.Option("--keep-words-of", help="Keep only the words of these .spacy files")
    ] = None,
) -> None:
    """Turn the fetched GloVe vectors into a spaCy pipeline for [initialize] vectors."""
    words, vectors = read_glove(glove_dir)
    keep = words_of(keep_words_of) if keep_words_of else None
    nlp = glove_pipeline(words, vectors, keep)
    output_dir.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output_dir)
    typer.echo(f"Wrote {len(nlp.vocab.vectors):,} x {vectors.shape[1]} GloVe vectors (attr LOWER) to {output_dir}")


if __name__ == "__main__":
    typer.run(main)
