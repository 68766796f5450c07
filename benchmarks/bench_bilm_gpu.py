"""Speed, memory and exactness of the biLM on a CUDA GPU.

    python benchmarks/bench_bilm_gpu.py --text FILE [--models original small] [--batch-sizes 32 128 512]

For the original ELMo architecture and the small one (random weights of realistic scale, written
in the AllenNLP format and loaded back, as in bench_bilm.py), on a seeded sample of real sentences
(FILE: raw text, tokenised and split into sentences with spaCy's blank English pipeline; without
--text, the synthetic corpus of bench_bilm.py), for each precision (fp32, tf32, bf16) and batch size:

- tokens/s of ``BiLM.forward`` (with ``batch_to_ids`` and the copy of the layers to the host, as
  the ``elmo`` component and ``embed`` do them) over length-sorted batches, token cache emptied
  before every pass; best of --repeats passes after a warm-up pass;
- the same for the straightforward computation (``reference_layers``: all 50 character positions,
  no token cache, one direction and one step at a time) on exactly the same batches, fp32;
- peak GPU memory (``torch.cuda.max_memory_allocated``);
- the largest error against a float64 computation on the longest sentences, absolute and
  relative to the largest value;
- performed FLOPs (flops.py, as bench_bilm.py counts them): the work that actually runs (the CNN
  over the positions it covers, once per distinct token of a pass; the LSTMs over every packed row,
  sentence boundaries and the rows added to small products included), and their rate as a
  fraction of this GPU's measured matrix-product ceiling in the same precision (an 8192^3
  product). The textbook count (CNN over all 50 positions for every token, LSTMs over real tokens
  only) is printed beside it.
"""

import argparse
import copy
import datetime
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import MODELS, SEED, build_sentences, real_sentences, set_realistic_weights, sorted_batches  # noqa: E402
from flops import inference_flops, textbook_flops_per_token  # noqa: E402

from spacy_elmo.bilm import BiLM, batch_to_ids  # noqa: E402
from spacy_elmo.bilm.precision import PRECISIONS, precision  # noqa: E402
from spacy_elmo.bilm.reference import reference_layers  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "bench_bilm_gpu.json"


def gemm_ceiling(name: str, n: int = 8192, repeats: int = 10) -> float:
    """TFLOP/s of the best of `repeats` n^3 products in `name`'s arithmetic."""
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    with precision("cuda", name):
        a @ b
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e12


def time_passes(run, repeats: int) -> float:
    run()  # warm-up: kernels chosen, memory pools filled
    best = math.inf
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def measure(name: str, sentences: List[List[str]], args, workdir: Path) -> Dict:
    torch.manual_seed(SEED)
    model = BiLM(MODELS[name]).eval()
    set_realistic_weights(model, sorted({w for s in sentences for w in s})[:20000])
    model.save_allennlp(workdir / name)
    model = BiLM.from_allennlp(workdir / name).to("cuda").eval()
    textbook = textbook_flops_per_token(MODELS[name])["total"]
    longest = sorted(sentences, key=len, reverse=True)[: args.float64_sentences]
    with torch.inference_mode():
        ids = batch_to_ids(longest).to("cuda")
        exact = reference_layers(copy.deepcopy(model).double(), ids)
    scale = float(exact.abs().max())
    result: Dict = {"rows": [], "float64_reference": {"sentences": len(longest), "max_abs_value": scale}}

    def ours(batches, name_):
        model.token_cache.clear()
        with torch.inference_mode(), precision("cuda", name_):
            for batch in batches:
                model(batch_to_ids(batch).to("cuda", non_blocking=True)).layers.float().cpu()

    for batch_size in args.batch_sizes:
        batches = sorted_batches(sentences, batch_size)
        tokens = sum(len(s) for s in sentences)
        flops = inference_flops(model.options, batches, model.token_cache.max_size)["total"]

        def straightforward():
            with torch.inference_mode():
                for batch in batches:
                    reference_layers(model, batch_to_ids(batch).to("cuda")).cpu()

        ref_seconds = time_passes(straightforward, max(1, args.repeats - 1))
        for name_ in args.precisions:
            torch.cuda.reset_peak_memory_stats()
            seconds = time_passes(lambda: ours(batches, name_), args.repeats)
            peak = torch.cuda.max_memory_allocated() / 2**20
            with torch.inference_mode(), precision("cuda", name_):
                model.token_cache.clear()
                got = model(ids).layers.double()
            error = float((got - exact).abs().max())
            result["rows"].append(
                {
                    "batch": batch_size,
                    "precision": name_,
                    "tokens": tokens,
                    "seconds": seconds,
                    "tokens_per_s": tokens / seconds,
                    "straightforward_tokens_per_s": tokens / ref_seconds,
                    "speedup": ref_seconds / seconds,
                    "peak_gpu_mb": peak,
                    "max_abs_error": error,
                    "max_rel_error": error / max(scale, 1.0),
                    "performed_tflops": flops / seconds / 1e12,
                    "performed_mflop_per_token": flops / tokens / 1e6,
                    "textbook_tflops": textbook * tokens / seconds / 1e12,
                    "textbook_mflop_per_token": textbook / 1e6,
                }
            )
            row = result["rows"][-1]
            print(
                f"{name:8s} batch {batch_size:4d} {name_}: {row['tokens_per_s']:12,.0f} tokens/s "
                f"(straightforward fp32 {row['straightforward_tokens_per_s']:10,.0f}, x{row['speedup']:.1f}); "
                f"peak {peak:7,.0f} MiB; max error {error:.1e} ({row['max_rel_error']:.1e} rel); "
                f"performed {row['performed_tflops']:.2f} TFLOP/s",
                flush=True,
            )
    return result


def main(argv=None) -> Dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", type=Path, help="raw text to sample sentences from (default: synthetic)")
    parser.add_argument("--sentences", type=int, default=4096)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["original", "small"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[32, 128, 512])
    parser.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=list(PRECISIONS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--float64-sentences", type=int, default=16)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("bench_bilm_gpu.py needs a CUDA device")
    sentences = real_sentences(args.text, args.sentences) if args.text else build_sentences(args.sentences)
    tokens = sum(map(len, sentences))
    print(
        f"{datetime.datetime.now().isoformat(timespec='seconds')} {torch.cuda.get_device_name()}, "
        f"torch {torch.__version__}; {len(sentences)} sentences, {tokens} tokens "
        f"({'text: ' + str(args.text) if args.text else 'synthetic'}), "
        f"{len({w for s in sentences for w in s})} distinct, longest token "
        f"{max(len(w.encode()) for s in sentences for w in s)} bytes"
    )
    ceilings = {name: gemm_ceiling(name) for name in args.precisions}
    print("matrix-product ceiling (8192^3):", ", ".join(f"{k} {v:.0f} TFLOP/s" for k, v in ceilings.items()))
    report = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "corpus": {
            "source": str(args.text) if args.text else "synthetic",
            "sentences": len(sentences),
            "tokens": tokens,
        },
        "ceiling_tflops": ceilings,
        "models": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            report["models"][name] = measure(name, sentences, args, Path(tmp))
    for result in report["models"].values():
        for row in result["rows"]:
            row["fraction_of_ceiling"] = row["performed_tflops"] / ceilings[row["precision"]]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(f"written to {args.output}")
    return report


if __name__ == "__main__":
    main()
