"""The tagged OANC sample (``word/TAG``) into part-of-speech train/dev/test DocBins.

The probe task of the layer study. Its test text is exactly the OANC text that
the shipped biLM never saw: ``experiments.data.corpus`` cut the sample into blocks of
20 sentences and held some out of the pretraining text (``dev_oanc.txt``, with
the shipped biLM's settings: seed 0, 2% per source); those blocks are the test
split here. Dev and train are drawn, by whole blocks and with ``--seed``, from
the other blocks (text the biLM was trained on, without tags).

The sample is read by ``experiments.data.sources.oanc``. The tags are the OANC's own Penn
Treebank tags, made by a tagger and not checked by hand (the first lines already show ``nonchalant/NN``,
``steamy/NN``, ``4/LS``): scores measure agreement with that tagger.

    python -m experiments.convert.pos assets corpus/curves/pos [--train-sentences 4000]

``--test-blocks`` picks the test blocks by their index instead (for tiny
inputs that lack the other pretraining sources).
"""

import random
from pathlib import Path
from typing import Annotated, List, Optional

import spacy
import typer
from spacy.tokens import Doc

from experiments.data.corpus import corpus_split
from experiments.data.inputs import exit_on_bad_input
from experiments.data.sources import ASSET_SOURCES
from experiments.data.sources.oanc import OANC_SENTENCES_PER_DOC, read_oanc, read_tagged
from experiments.data.splits import write_splits
from experiments.errors import ExperimentError

OANC_PATH = ASSET_SOURCES["oanc"][0]


def held_out_blocks(assets_dir: Path, dev_fraction: float = 0.02, seed: int = 0) -> list[int]:
    """Indices of the OANC blocks that the pretraining split holds out (its dev_oanc.txt)."""
    blocks = {tuple(doc): i for i, doc in enumerate(read_oanc(assets_dir / OANC_PATH))}
    _train, dev, _leakage, _dups = corpus_split(assets_dir, None, dev_fraction, seed)
    held = [tuple(doc) for source, doc in dev if source == "oanc"]
    missing = [doc for doc in held if doc not in blocks]
    if missing:
        raise ExperimentError(
            assets_dir / OANC_PATH,
            expected="held-out OANC blocks the leakage filter left whole",
            found=f"{len(missing)} block(s) it changed",
            fix="pick the test blocks with --test-blocks",
        )
    return sorted(blocks[doc] for doc in held)


def split_blocks(n_blocks: int, test_blocks: List[int], dev_blocks: int, seed: int) -> dict[str, list[int]]:
    """Test = the given blocks; dev = ``dev_blocks`` others drawn with ``seed``; train = the rest (shuffled)."""
    test = sorted(set(test_blocks))
    rest = sorted(set(range(n_blocks)) - set(test))
    random.Random(seed).shuffle(rest)
    return {"train": rest[dev_blocks:], "dev": sorted(rest[:dev_blocks]), "test": test}


def convert_pos(
    tagged_path: Path,
    output_dir: Path,
    test_blocks: List[int],
    dev_blocks: int = 20,
    train_sentences: int = 4000,
    seed: int = 0,
) -> dict[str, dict[str, int]]:
    sentences = read_tagged(tagged_path)
    blocks = [sentences[i : i + OANC_SENTENCES_PER_DOC] for i in range(0, len(sentences), OANC_SENTENCES_PER_DOC)]
    if any(not 0 <= i < len(blocks) for i in test_blocks):
        raise ExperimentError(
            "--test-blocks", expected=f"block indices in 0..{len(blocks) - 1}", found=f"{test_blocks} (out of range)"
        )
    split = split_blocks(len(blocks), test_blocks, dev_blocks, seed)
    vocab = spacy.blank("en").vocab
    splits, counts = {}, {}
    for name, indices in split.items():
        chosen = [sentence for i in indices for sentence in blocks[i]]
        if name == "train" and train_sentences:
            chosen = chosen[:train_sentences]
        splits[name] = [Doc(vocab, words=[w for w, _ in s], tags=[t for _, t in s]) for s in chosen]
        counts[name] = {"sentences": len(chosen), "tokens": sum(map(len, chosen)), "blocks": len(indices)}
    write_splits(output_dir, splits)
    return counts


def main(
    assets_dir: Annotated[Path, typer.Argument(help="The assets folder `experiments.data.fetch` wrote")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for train/dev/test.spacy")],
    train_sentences: Annotated[int, typer.Option(help="Training sentences kept (0 = all)")] = 4000,
    dev_blocks: Annotated[int, typer.Option(help="Blocks of 20 sentences held out as dev")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the dev/train draw")] = 0,
    test_blocks: Annotated[
        Optional[List[int]],
        typer.Option("--test-blocks", help="Test block indices (default: the biLM's held-out OANC)"),
    ] = None,
) -> None:
    """OANC part-of-speech train/dev/test, tested on the text the shipped biLM held out."""
    with exit_on_bad_input():
        tests = test_blocks if test_blocks else held_out_blocks(assets_dir)
        counts = convert_pos(assets_dir / OANC_PATH, output_dir, tests, dev_blocks, train_sentences, seed)
    for name, c in counts.items():
        typer.echo(f"{name}: {c['sentences']:,} sentences, {c['tokens']:,} tokens ({c['blocks']} blocks)")


if __name__ == "__main__":
    typer.run(main)
