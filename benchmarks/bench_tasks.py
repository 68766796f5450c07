"""What ELMo costs per task: words/s of training and of prediction, with and without it.

For NER (WNUT-16), 5-class sentiment (RT snippets) and the POS probe (OANC), the
baseline config and the ELMo config (the shipped biLM, frozen, with the training
cache) train on the same first --docs training docs in the same batches, as
`spacy train` makes them, for --epochs epochs: the first epoch runs the biLM
(and fills the cache), later epochs read the cache. Prediction is `nlp.pipe`
over the test texts (best of two passes). Needs the corpora of the `curves`
workflow (corpus/curves/<task>/).

    python benchmarks/bench_tasks.py [--docs 400] [--epochs 3] [--threads 1]

Writes benchmarks/results/bench_tasks.json (read by experiments/report/curves.py --cost).
"""

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import spacy
import torch
from spacy.tokens import DocBin

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_bilm import peak_rss_mb  # noqa: E402
from bench_pipeline import train_words_per_second  # noqa: E402

BILM = "elmo-en-small"  # the shipped biLM, by name
# task: {run: config}
RUNS = {
    "ner": {"baseline": "ner_baseline", "elmo": "ner_elmo"},
    "sentiment5": {"baseline": "textcat_baseline", "elmo": "textcat_elmo"},
    "pos": {"baseline": "pos_baseline", "elmo (probe, mix)": "pos_probe"},
}


def train_speed(config_name: str, train_path: Path, n_epochs: int) -> dict:
    overrides = {"paths.train": str(train_path), "paths.dev": str(train_path)}
    if "elmo" in config_name or "probe" in config_name:
        overrides["paths.elmo"] = BILM
    nlp, epochs, words = train_words_per_second(ROOT / "configs" / f"{config_name}.cfg", overrides, n_epochs)
    return {"nlp": nlp, "epoch_wps": epochs, "words": words}


def predict_speed(nlp, texts, batch_size: int = 128) -> float:
    n_words = sum(len(doc) for doc in nlp.tokenizer.pipe(texts))
    list(nlp.pipe(texts[:16]))
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        list(nlp.pipe(texts, batch_size=batch_size))
        best = min(best, time.perf_counter() - start)
    return n_words / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus" / "curves")
    parser.add_argument("--docs", type=int, default=400, help="training docs (the first N)")
    parser.add_argument("--test-docs", type=int, default=400, help="test docs to predict")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tasks", nargs="+", choices=sorted(RUNS), default=list(RUNS))
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "bench_tasks.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report = {
        "machine": f"{platform.processor() or platform.machine()}, {args.threads} thread(s), "
        f"torch {torch.__version__}, spaCy {spacy.__version__}",
        "docs": args.docs,
        "epochs": args.epochs,
        "tasks": {},
    }
    for task in args.tasks:
        vocab = spacy.blank("en").vocab
        docs = list(DocBin().from_disk(args.corpus / task / "train.spacy").get_docs(vocab))[: args.docs]
        test = list(DocBin().from_disk(args.corpus / task / "test.spacy").get_docs(vocab))[: args.test_docs]
        texts = [doc.text for doc in test]
        with tempfile.TemporaryDirectory() as tmp:
            train_path = Path(tmp) / "train.spacy"
            DocBin(docs=docs, store_user_data=True).to_disk(train_path)
            for run, config in RUNS[task].items():
                result = train_speed(config, train_path, args.epochs)
                row = {
                    "config": config,
                    "train_wps_first": result["epoch_wps"][0],
                    "train_wps_cached": sum(result["epoch_wps"][1:]) / max(1, len(result["epoch_wps"]) - 1),
                    "epoch_wps": result["epoch_wps"],
                    "predict_wps": predict_speed(result["nlp"], texts),
                    "train_words_per_epoch": result["words"],
                }
                report["tasks"].setdefault(task, {})[run] = row
                print(
                    f"{task:10s} {run:18s} train {row['train_wps_first']:9,.0f} words/s (epoch 1), "
                    f"{row['train_wps_cached']:9,.0f} (later epochs); predict {row['predict_wps']:9,.0f} words/s",
                    flush=True,
                )
        base, elmo = list(report["tasks"][task].values())
        print(
            f"{task:10s} ELMo costs x{base['train_wps_first'] / elmo['train_wps_first']:.1f} (train, epoch 1), "
            f"x{base['train_wps_cached'] / elmo['train_wps_cached']:.1f} (train, cached), "
            f"x{base['predict_wps'] / elmo['predict_wps']:.1f} (predict)",
            flush=True,
        )
    report["peak_rss_mb"] = peak_rss_mb()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {args.output}")


if __name__ == "__main__":
    main()
