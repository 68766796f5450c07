"""How spread out a pipeline's biLM layers are on some text: a collapse check for a fine-tuned biLM.

    python -m experiments.report.spread corpus/v2eval/sentiment5/dev.spacy MODEL [MODEL ...] [--docs 60]

For each pipeline (a folder with an `elmo` component) and each biLM layer: the mean norm of the
token vectors, and the mean cosine similarity of 2,000 random pairs of tokens. A biLM whose
vectors point the same way whatever the token (mean cosine near 1) no longer tells tokens apart;
fine-tuning the biLM with a task's loss can do that to it.
"""

from pathlib import Path
from typing import Dict, List

import numpy
import typer

from experiments.report.comparison import md_table

PAIRS = 2000


def spread(vectors: numpy.ndarray, pairs: int = PAIRS, seed: int = 0) -> Dict[str, float]:
    """Mean norm of the rows of ``vectors`` (tokens × width) and mean cosine of random pairs of rows."""
    norms = numpy.linalg.norm(vectors, axis=1)
    unit = vectors / numpy.maximum(norms, 1e-12)[:, None]
    first, second = numpy.random.default_rng(seed).integers(0, len(vectors), size=(2, pairs))
    return {"mean_norm": float(norms.mean()), "mean_cosine": float((unit[first] * unit[second]).sum(axis=1).mean())}


def main(
    docs_path: Path = typer.Argument(..., exists=True, dir_okay=False, help="A .spacy file of texts"),
    models: List[Path] = typer.Argument(..., exists=True, file_okay=False, help="Pipelines with an elmo component"),
    n_docs: int = typer.Option(60, "--docs", min=1, help="How many of the texts to run"),
) -> None:
    import spacy
    from spacy.tokens import DocBin

    from spacy_elmo.layer_mixes import load_pipeline

    texts = [doc.text for doc in DocBin().from_disk(docs_path).get_docs(spacy.blank("en").vocab)][:n_docs]
    rows = []
    for model in models:
        nlp = load_pipeline(model)
        if "elmo" not in nlp.pipe_names:
            raise typer.BadParameter(f"{model} has no elmo component (it has: {', '.join(nlp.pipe_names)})")
        with nlp.select_pipes(enable=["elmo"]):
            layers = [numpy.asarray(doc._.elmo.layers) for doc in nlp.pipe(texts)]
        for index in range(layers[0].shape[0]):
            found = spread(numpy.concatenate([doc_layers[index] for doc_layers in layers]))
            rows.append([str(model), str(index), f"{found['mean_norm']:.2f}", f"{found['mean_cosine']:.3f}"])
    typer.echo(md_table(["pipeline", "layer", "mean norm", f"mean cosine of {PAIRS:,} random token pairs"], rows))


if __name__ == "__main__":
    typer.run(main)
