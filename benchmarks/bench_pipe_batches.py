"""`nlp.pipe` with `elmo` against the biLM's own forward pass, per batch setting, in one run.

    python benchmarks/bench_pipe_batches.py --device cuda --texts .gpu/texts.json   # on a GPU
    python benchmarks/bench_pipe_batches.py --sentences 64 --models shipped \\
        --max-batch-tokens 512 4096 --pipe-batch-sizes 16 64                      # a smoke run on a CPU

On bench_overhead.py's real texts (or --texts, a JSON list of texts), for each biLM (the
original architecture with realistic random weights, the shipped one):

- the ceiling: ``BiLM.encode_words`` over length-sorted batches of --forward-batch sentences,
  each batch's layers copied to the host as the component copies them (``copied_to_host``);
- ``nlp.pipe`` (sentencizer + ``elmo``) at each ``max_batch_tokens`` of the component (the most
  tokens the biLM reads at once) and each ``batch_size`` of ``nlp.pipe`` (the docs the component
  gets at once, which caps its batches too), in words per second (the real tokens, as the
  ceiling counts them), and its share of the ceiling.

Each figure is the best of --repeats passes after a warm-up pass (on a GPU: kernels chosen,
memory pools filled), the token cache emptied before every pass. The rows say where the
component loses the GPU: a share that grows with ``max_batch_tokens`` means its batches are too
small; one that stays low at large batches means per-doc work on the host.
"""

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import cpu_name, sorted_batches  # noqa: E402
from bench_overhead import elmo_pipeline, fetch, real_texts  # noqa: E402
from int8_accuracy import load_model  # noqa: E402

from spacy_elmo.bilm import BiLM  # noqa: E402
from spacy_elmo.device import copied_to_host  # noqa: E402


def best_seconds(run: Callable[[], None], repeats: int, device: str) -> float:
    run()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def forward_seconds(model: BiLM, sentences: List[List[str]], batch: int, repeats: int, device: str) -> float:
    batches = sorted_batches(sentences, batch)

    def run() -> None:
        model.clear_token_cache()
        with torch.inference_mode():
            for _ in copied_to_host(model.encode_words(b) for b in batches):
                pass

    return best_seconds(run, repeats, device)


def pipe_seconds(model: BiLM, texts: List[str], max_batch_tokens: int, batch_size: int, args) -> float:
    from spacy_elmo.models.settings import SETTINGS

    nlp = elmo_pipeline(model)
    elmo = nlp.get_pipe("elmo")
    settings = elmo.model.attrs[SETTINGS]
    elmo.model.attrs[SETTINGS] = settings.replace(max_batch_tokens=max(max_batch_tokens, settings["window_size"]))

    def run() -> None:
        model.clear_token_cache()
        for _ in nlp.pipe(texts, batch_size=batch_size):
            pass

    return best_seconds(run, args.repeats, args.device)


def main(args: argparse.Namespace) -> None:
    import spacy

    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        spacy.require_gpu(0)
    if args.texts:
        texts = json.loads(Path(args.texts).read_text())[: args.sentences]
    else:
        fetch(Path(args.data))
        texts = real_texts(Path(args.data), args.sentences)
    splitter = spacy.blank("en")
    splitter.add_pipe("sentencizer")
    sentences = [[t.text for t in sent] for doc in splitter.pipe(texts) for sent in doc.sents]
    n_tokens = sum(len(s) for s in sentences)
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU: {cpu_name()}, {args.threads} thread(s)"
    print(f"{where}; torch {torch.__version__}; {len(texts)} texts, {len(sentences)} sentences, {n_tokens} tokens")
    print("| biLM | pass | max_batch_tokens | nlp.pipe batch_size | words/s | share of the forward pass |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    results: Dict[str, float] = {}
    for name in args.models:
        model = load_model(name, sentences).to(args.device)
        ceiling = n_tokens / forward_seconds(model, sentences, args.forward_batch, args.repeats, args.device)
        results[f"{name} forward"] = ceiling
        print(f"| {name} | forward, {args.forward_batch} sentences a batch | | | {ceiling:,.0f} | 1.00 |", flush=True)
        for tokens, docs in itertools.product(args.max_batch_tokens, args.pipe_batch_sizes):
            rate = n_tokens / pipe_seconds(model, texts, tokens, docs, args)
            results[f"{name} pipe {tokens} {docs}"] = rate
            print(f"| {name} | nlp.pipe | {tokens} | {docs} | {rate:,.0f} | {rate / ceiling:.2f} |", flush=True)
    if args.output:
        args.output.write_text(json.dumps({"device": where, "n_tokens": n_tokens, "words_per_second": results}))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--models", nargs="+", choices=("original", "shipped"), default=["original", "shipped"])
    parser.add_argument("--sentences", type=int, default=2048, help="texts (each one or more sentences)")
    parser.add_argument("--texts", help="a JSON list of texts (bench_overhead.py --write-texts)")
    parser.add_argument("--forward-batch", type=int, default=512)
    parser.add_argument("--max-batch-tokens", type=int, nargs="+", default=[4096, 16384, 65536])
    parser.add_argument("--pipe-batch-sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "spacy-elmo-bench-data"))
    parser.add_argument("--output", type=Path)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
