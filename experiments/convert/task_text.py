"""Write the text of a task's docs, one doc a line, for tuning the biLM to the task's domain.

Usage: python -m experiments.convert.task_text corpus/full/ner/train.spacy corpus/full/ner/train.txt

Only the text: no label of the task goes into the file (the biLM is tuned on the training
split's text, and its perplexity is measured on the dev split's).
"""

from pathlib import Path

import spacy
import typer
from spacy.tokens import DocBin

from experiments.data.inputs import exit_on_bad_input, require_items
from experiments.errors import ExperimentError
from experiments.files import write_atomic


def task_text(docbin_path: Path) -> str:
    nlp = spacy.blank("en")
    try:
        docs = list(DocBin().from_disk(docbin_path).get_docs(nlp.vocab))
    except ValueError as err:  # spaCy says E1014 for any damage
        raise ExperimentError(
            docbin_path,
            expected="a spaCy DocBin (.spacy) file",
            found=f"a file spaCy cannot read ({type(err).__name__}: {err})",
            fix="convert the task's data again",
        ) from None
    lines = [" ".join(doc.text.split()) + "\n" for doc in docs if doc.text.strip()]
    require_items(lines, docbin_path, "docs with text")
    return "".join(lines)


def main(
    docbin_path: Path = typer.Argument(..., exists=True, dir_okay=False),
    output_path: Path = typer.Argument(...),
) -> None:
    with exit_on_bad_input():
        text = task_text(docbin_path)
    write_atomic(output_path, text)
    print(f"{docbin_path} -> {output_path}: {text.count(chr(10)):,} lines, {len(text.split()):,} tokens")


if __name__ == "__main__":
    typer.run(main)
