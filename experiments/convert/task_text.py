"""Write the text of a task's docs, one doc a line, for tuning the biLM to the task's domain.

Usage: python -m experiments.convert.task_text corpus/full/ner/train.spacy corpus/full/ner/train.txt

Only the text: no label of the task goes into the file (the biLM is tuned on the training
split's text, and its perplexity is measured on the dev split's).
"""
from pathlib import Path

import spacy
import typer
from spacy.tokens import DocBin

from experiments.files import write_atomic


def task_text(docbin_path: Path) -> str:
    nlp = spacy.blank("en")
    docs = DocBin().from_disk(docbin_path).get_docs(nlp.vocab)
    return "".join(" ".join(doc.text.split()) + "\n" for doc in docs if doc.text.strip())


def main(
    docbin_path: Path = typer.Argument(..., exists=True, dir_okay=False),
    output_path: Path = typer.Argument(...),
) -> None:
    text = task_text(docbin_path)
    write_atomic(output_path, text)
    print(f"{docbin_path} -> {output_path}: {text.count(chr(10)):,} lines, {len(text.split()):,} tokens")


if __name__ == "__main__":
    typer.run(main)
