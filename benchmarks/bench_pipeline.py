"""Throughput of the `elmo` component inside spaCy.

Measures, in one run and on the same data:
  1. `nlp.pipe` words per second of a pipeline with just `elmo` (the small
     architecture: LSTM 1024 / projection 128, random weights of realistic
     scale), against a blank pipeline's tokenisation alone;
  2. training words per second for `configs/ner_elmo.cfg` with the training
     cache of frozen biLM outputs off and on (`train_cache_mb` 0 vs 1024),
     over several epochs of the same batches, as `spacy train` makes them.

    python benchmarks/bench_pipeline.py [--docs 512] [--epochs 3] [--threads 2]

Writes benchmarks/results/bench_pipeline.json.
"""

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import spacy
import torch
from spacy.tokens import Doc, Span
from spacy.training.initialize import init_nlp
from spacy.util import load_config

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import build_sentences, set_realistic_weights  # noqa: E402

from spacy_elmo.bilm import BiLM, BiLMOptions  # noqa: E402

ROOT = Path(__file__).parent.parent
SMALL = BiLMOptions(lstm_dim=1024, projection_dim=128, n_highway=1)


def write_small_bilm(directory: Path, sentences) -> Path:
    torch.manual_seed(0)
    model = BiLM(SMALL)
    set_realistic_weights(model, sorted({w for s in sentences for w in s}))
    model.save_allennlp(directory)
    return directory


def labelled_docs(nlp, sentences, seed: int = 0):
    """Docs with a made-up entity per sentence (the labels only drive the NER's updates)."""
    rng = random.Random(seed)
    docs = []
    for words in sentences:
        doc = Doc(nlp.vocab, words=words)
        start = rng.randrange(len(doc))
        doc.ents = [Span(doc, start, start + 1, label=rng.choice(["PER", "LOC", "ORG"]))]
        docs.append(doc)
    return docs


def bench_pipe(bilm_dir: Path, texts, batch_size: int) -> dict:
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    nlp.initialize()
    n_words = sum(len(nlp.make_doc(t)) for t in texts)
    list(nlp.pipe(texts[:32]))  # warm up
    start = time.perf_counter()
    blank = spacy.blank("en")
    list(blank.pipe(texts, batch_size=batch_size))
    tokenise = time.perf_counter() - start
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        list(nlp.pipe(texts, batch_size=batch_size))
        best = min(best, time.perf_counter() - start)
    return {"words": n_words, "elmo_wps": n_words / best, "tokenizer_only_wps": n_words / tokenise}


def train_words_per_second(config_path: Path, overrides: dict, n_epochs: int):
    """Train the config's pipeline for `n_epochs` epochs of the same batches (as a fixed corpus
    gives, as `spacy train` makes them). RETURNS: (nlp, words/s of each epoch, words per epoch)."""
    config = load_config(config_path, overrides=overrides, interpolate=False)
    nlp = init_nlp(config)
    resolved = nlp.config.interpolate()
    T = resolved["training"]
    corpus = spacy.registry.resolve({"c": resolved["corpora"]})["c"]["train"]
    batcher = spacy.registry.resolve({"b": T["batcher"]})["b"]
    optimizer = nlp.create_optimizer()
    epochs = []
    random.seed(0)
    batches = list(batcher(corpus(nlp)))
    for _ in range(n_epochs):
        words = 0
        start = time.perf_counter()
        for batch in batches:
            nlp.update(batch, drop=T["dropout"], sgd=optimizer)
            words += sum(len(eg.predicted) for eg in batch)
        epochs.append(words / (time.perf_counter() - start))
    return nlp, epochs, words


def bench_train(bilm_dir: Path, docs_path: Path, n_epochs: int, cache_mb: int) -> dict:
    overrides = {
        "paths.train": str(docs_path),
        "paths.dev": str(docs_path),
        "paths.elmo": str(bilm_dir),
        "components.elmo.train_cache_mb": cache_mb,
    }
    nlp, epochs, _ = train_words_per_second(ROOT / "configs" / "ner_elmo.cfg", overrides, n_epochs)
    cache = nlp.get_pipe("elmo").train_cache
    return {"epoch_wps": epochs, "cache_entries": len(cache), "cache_mb": cache.n_bytes / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sentences = build_sentences(args.docs)
    texts = [" ".join(s) for s in sentences]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bilm_dir = write_small_bilm(tmp / "bilm", sentences)
        nlp = spacy.blank("en")
        from spacy.tokens import DocBin

        DocBin(docs=labelled_docs(nlp, sentences)).to_disk(tmp / "train.spacy")
        pipe = bench_pipe(bilm_dir, texts, args.batch_size)
        no_cache = bench_train(bilm_dir, tmp / "train.spacy", args.epochs, cache_mb=0)
        cached = bench_train(bilm_dir, tmp / "train.spacy", args.epochs, cache_mb=1024)
    later = slice(1, None)
    speedup = (sum(cached["epoch_wps"][later]) / max(1, len(cached["epoch_wps"][later]))) / (
        sum(no_cache["epoch_wps"][later]) / max(1, len(no_cache["epoch_wps"][later]))
    )
    report = {
        "docs": args.docs,
        "threads": args.threads,
        "pipe": pipe,
        "train_no_cache": no_cache,
        "train_cache": cached,
        "cache_speedup_after_epoch_1": speedup,
    }
    print(
        f"nlp.pipe, small biLM, batch {args.batch_size}: {pipe['elmo_wps']:,.0f} words/s "
        f"({pipe['words']:,} words; tokenizer alone {pipe['tokenizer_only_wps']:,.0f} words/s)"
    )
    print("spacy train (ner_elmo.cfg), words/s per epoch:")
    print("  cache off: " + ", ".join(f"{w:,.0f}" for w in no_cache["epoch_wps"]))
    print(
        "  cache on:  "
        + ", ".join(f"{w:,.0f}" for w in cached["epoch_wps"])
        + f"  ({cached['cache_entries']} docs, {cached['cache_mb']:.1f} MB cached)"
    )
    print(f"  speed-up from the cache after the first epoch: {speedup:.2f}x")
    out = ROOT / "benchmarks" / "results" / "bench_pipeline.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
