"""The biLM's speed and peak memory, int8 against float32, in the same run.

    python benchmarks/int8_speed.py --threads 1                     # the shipped biLM
    python benchmarks/int8_speed.py --models shipped original       # and the original architecture

On bench_overhead.py's real sentences (int8_accuracy.py reads them; the original
architecture with realistic random weights):

- ``BiLM.forward`` over length-sorted batches of 32, 128 and 512 sentences (those no
  larger than the sentences read: --sentences, --original-sentences), the token
  cache emptied before every pass, and ``nlp.pipe`` (sentencizer + ``elmo``, the
  component's defaults) over the texts of those sentences, the precision "fp32"
  against "int8-always" (int8 whatever this CPU's speed). The passes alternate, float32
  then int8, --repeats times, and each side keeps its best (other jobs on a shared
  machine only ever make a pass slower). The FLOPs of a forward pass are counted
  (flops.py; int8 runs the same multiply-adds in integers) and given per second.
- Peak memory: a fresh process per model and arithmetic loads the biLM and runs one
  pass at batch 128 (its peak resident set, VmHWM; the int8 weights come on top of
  the float32 ones, which stay the reference).

"int8 pays" says what ``precision = "int8"`` chooses here for that LSTM's sizes
(`int8.int8_pays`, at least 1.5 times as fast in its own timing).
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.bilm.int8 import int8_pays
from spacy_elmo.bilm.precision import INT8_ALWAYS, precision

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import cpu_name, peak_rss_mb, sorted_batches  # noqa: E402
from bench_overhead import elmo_pipeline  # noqa: E402
from flops import inference_flops  # noqa: E402
from int8_accuracy import load_model, real_sentences  # noqa: E402

BATCHES = (32, 128, 512)
MEMORY_BATCH = 128
ARITHMETIC = {"fp32": "fp32", "int8": INT8_ALWAYS}


def forward_pass(model: BiLM, batches: List[List[List[str]]], arithmetic: str) -> Callable[[], float]:
    """A pass of ``BiLM.forward`` over `batches` from an empty token cache: its seconds."""
    ids = [batch_to_ids(batch) for batch in batches]

    def run() -> float:
        model.clear_token_cache()
        start = time.perf_counter()
        with torch.inference_mode(), precision("cpu", arithmetic):
            for batch in ids:
                model(batch)
        return time.perf_counter() - start

    return run


def pipe_pass(model: BiLM, texts: List[str], arithmetic: str) -> Callable[[], float]:
    """A pass of ``nlp.pipe`` (sentencizer + ``elmo`` holding `model`) over `texts`: its seconds."""
    from spacy_elmo.models.settings import SETTINGS

    nlp = elmo_pipeline(model)
    elmo = nlp.get_pipe("elmo")
    elmo.model.attrs[SETTINGS] = elmo.model.attrs[SETTINGS].replace(precision=arithmetic)

    def run() -> float:
        model.clear_token_cache()
        start = time.perf_counter()
        for _ in nlp.pipe(texts, batch_size=256):
            pass
        return time.perf_counter() - start

    return run


def alternate(passes: Dict[str, Callable[[], float]], repeats: int) -> Dict[str, float]:
    """Each pass's best seconds, the passes taken in turn (A B A B), after one warm-up each."""
    for run in passes.values():
        run()  # first-call costs; the int8 weights made once
    best = {name: float("inf") for name in passes}
    for _ in range(repeats):
        for name, run in passes.items():
            best[name] = min(best[name], run())
    return best


def peak_memory_mb(args: argparse.Namespace, name: str, side: str) -> float:
    """The maximum resident set of a fresh process that loads `name` and runs one pass in `side`."""
    command = [sys.executable, __file__, "--peak-of", name, side, "--threads", str(args.threads)]
    command += ["--sentences", str(args.sentences), "--original-sentences", str(args.original_sentences)]
    command += ["--data", args.data]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["peak_mb"]


def one_peak(args: argparse.Namespace) -> None:
    name, side = args.peak_of
    used = sentences_of(args, name)
    model = load_model(name, used)
    batches = sorted_batches(used, MEMORY_BATCH)
    forward_pass(model, batches, ARITHMETIC[side])()
    print(json.dumps({"peak_mb": peak_rss_mb()}))


def sentences_of(args: argparse.Namespace, name: str) -> List[List[str]]:
    sentences = real_sentences(Path(args.data), args.sentences)
    return sentences if name == "shipped" else sentences[: args.original_sentences]


def main(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    if args.peak_of:
        one_peak(args)
        return
    print(f"CPU: {cpu_name()}; {args.threads} thread(s); torch {torch.__version__}")
    print("| model | pass | tokens | GFLOP | fp32 tokens/s | int8 tokens/s | int8 / fp32 ", end="")
    print("| fp32 GFLOP/s | int8 GFLOP/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    verdicts, memory = [], []
    for name in args.models:
        used = sentences_of(args, name)
        model = load_model(name, used)
        n_tokens = sum(len(s) for s in used)
        verdicts.append(f"{name}: int8 pays: {int8_pays(model.lstm.int8_shapes, args.threads)}")
        rows = []
        for batch_size in [b for b in BATCHES if b <= len(used)]:  # a larger one would repeat the last
            batches = sorted_batches(used, batch_size)
            flops = inference_flops(model.options, batches)["total"]
            passes = {side: forward_pass(model, batches, arithmetic) for side, arithmetic in ARITHMETIC.items()}
            rows.append((f"forward, batch {batch_size}", flops, alternate(passes, args.repeats)))
        texts = [" ".join(s) for s in used]
        passes = {side: pipe_pass(model, texts, arithmetic) for side, arithmetic in ARITHMETIC.items()}
        rows.append(("nlp.pipe with elmo", None, alternate(passes, args.repeats)))
        for label, flops, best in rows:
            rate = {side: n_tokens / seconds for side, seconds in best.items()}
            gflops = "" if flops is None else f"{flops / 1e9:,.1f}"
            per_second = ["", ""] if flops is None else [f"{flops / best[s] / 1e9:,.1f}" for s in ARITHMETIC]
            print(
                f"| {name} | {label} | {n_tokens} | {gflops} | {rate['fp32']:,.0f} | {rate['int8']:,.0f} "
                f"| {rate['int8'] / rate['fp32']:.2f} | {per_second[0]} | {per_second[1]} |",
                flush=True,
            )
        if args.memory:
            peaks = {side: peak_memory_mb(args, name, side) for side in ARITHMETIC}
            memory.append(
                f"| {name} | {peaks['fp32']:,.0f} | {peaks['int8']:,.0f} | {peaks['int8'] / peaks['fp32']:.3f} |"
            )
    print()
    print("\n".join(verdicts))
    if memory:
        print(f"\n| model | fp32 peak MB | int8 peak MB | int8 / fp32 |  (one pass, batch {MEMORY_BATCH})")
        print("| --- | ---: | ---: | ---: |")
        print("\n".join(memory))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=["shipped", "original"], default=["shipped"])
    parser.add_argument("--sentences", type=int, default=128)
    parser.add_argument("--original-sentences", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True, help="Peak memory rows")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "spacy-elmo-bench-data"))
    parser.add_argument("--peak-of", nargs=2, metavar=("MODEL", "SIDE"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
