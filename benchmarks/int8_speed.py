"""Tokens per second of the biLM, int8 against float32, in the same run.

    python benchmarks/int8_speed.py --threads 1                     # the shipped biLM, batches 32 and 128
    python benchmarks/int8_speed.py --models shipped original       # and the original architecture

On bench_overhead.py's real sentences (int8_accuracy.py reads them), ``BiLM.forward``
over length-sorted batches, the token cache emptied before every pass. The passes
alternate, float32 then int8, --repeats times, and each side keeps its best (other
jobs on a shared machine only ever make a pass slower). The int8 passes run
through `int8_products` whatever this CPU's speed; the line "int8 pays" says
what `precision(device, "int8")` would choose here (`int8.int8_pays`).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List

import torch

from spacy_elmo.bilm import BiLM, batch_to_ids, length_sorted_batches
from spacy_elmo.bilm.int8 import int8_pays, int8_products

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import cpu_name  # noqa: E402
from int8_accuracy import load_model, real_sentences  # noqa: E402

BATCHES = (32, 128)


def one_pass(model: BiLM, batches: List[List[List[str]]]) -> Callable[[], float]:
    """A pass over `batches` from an empty token cache: its seconds."""
    ids = [batch_to_ids(batch) for batch in batches]

    @torch.inference_mode()
    def run() -> float:
        model.clear_token_cache()
        start = time.perf_counter()
        for batch in ids:
            model(batch)
        return time.perf_counter() - start

    return run


def int8_run(run: Callable[[], float]) -> Callable[[], float]:
    def inside() -> float:
        with int8_products():
            return run()

    return inside


def main(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}; {args.threads} thread(s); torch {torch.__version__}; int8 pays: {int8_pays()}")
    sentences = real_sentences(Path(args.data), args.sentences)
    print("| model | batch | tokens | fp32 tokens/s | int8 tokens/s | int8 / fp32 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.models:
        used = sentences if name == "shipped" else sentences[: args.original_sentences]
        model = load_model(name, used)
        n_tokens = sum(len(s) for s in used)
        for batch_size in BATCHES:
            batches = [[used[i] for i in rows] for rows in length_sorted_batches([len(s) for s in used], batch_size)]
            fp32 = one_pass(model, batches)
            int8 = int8_run(fp32)
            fp32(), int8()  # warm: first-call costs, the int8 weights made once
            best = {"fp32": float("inf"), "int8": float("inf")}
            for _ in range(args.repeats):  # A B A B
                best["fp32"] = min(best["fp32"], fp32())
                best["int8"] = min(best["int8"], int8())
            rate = {k: n_tokens / v for k, v in best.items()}
            print(
                f"| {name} | {batch_size} | {n_tokens} | {rate['fp32']:,.0f} | {rate['int8']:,.0f} "
                f"| {rate['int8'] / rate['fp32']:.3f} |",
                flush=True,
            )


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=["shipped", "original"], default=["shipped"])
    parser.add_argument("--sentences", type=int, default=128)
    parser.add_argument("--original-sentences", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "spacy-elmo-bench-data"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
