"""Speed and memory of biLM pretraining (``spacy_elmo pretrain``) on real text.

    python benchmarks/bench_pretrain.py --text corpus/release/pretrain/train.txt \
        --configs bilm_demo bilm_release --threads 1 2            # CPU
    python benchmarks/bench_pretrain.py --text corpus/release/pretrain/train.txt \
        --configs bilm_small bilm_release --device cuda --precisions fp32 tf32 bf16

Each setting runs in its own process (so that its peak memory is its own): the config's model
trains for --steps steps on the first --max-lines lines of the text (tokenised once into a shared
prepared folder, not timed), and the report gives the median step time and the tokens/s (targets
of one direction, as the training log counts them) over the steps after the first --warmup, the
peak resident memory and, on a GPU, the peak GPU memory.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import peak_rss_mb  # noqa: E402

CONFIGS = Path(__file__).parent.parent / "configs"
RESULTS = Path(__file__).parent / "results" / "bench_pretrain.json"


def worker(args) -> None:
    import torch

    from spacy_elmo.training.pretrain import pretrain

    times, tokens, last = [], [], [time.perf_counter(), 0]

    def clock(state, lm):
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        now = time.perf_counter()
        times.append(now - last[0])
        tokens.append(state.tokens - last[1])
        last[0], last[1] = now, state.tokens

    overrides = {"paths.train": args.train, "paths.dev": None, "training.max_steps": args.steps,
                 "training.max_epochs": 0, "training.eval_every": 0, "training.checkpoint_every": args.steps,
                 "training.precision": args.precision, "system.threads": args.threads,
                 "corpus.prepared_dir": args.prepared}
    with tempfile.TemporaryDirectory() as tmp:
        result = pretrain(CONFIGS / f"{args.config}.cfg", Path(tmp) / "run", overrides=overrides,
                          device=args.device, progress=False, on_step=clock)
    timed, counted = times[args.warmup:], tokens[args.warmup:]
    report = {
        "config": args.config, "device": args.device, "precision": args.precision, "threads": args.threads,
        "parameters": result.parameters, "steps_timed": len(timed),
        "median_step_ms": 1000 * sorted(timed)[len(timed) // 2],
        "tokens_per_s": sum(counted) / sum(timed), "peak_rss_mb": peak_rss_mb(),
        "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if args.device.startswith("cuda") else None,
    }
    Path(args.worker_output).write_text(json.dumps(report))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", required=True, help="raw training text, one document or paragraph a line")
    parser.add_argument("--max-lines", type=int, default=4000)
    parser.add_argument("--configs", nargs="+", default=["bilm_demo", "bilm_release"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precisions", nargs="+", default=["fp32"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("config", "precision", "train", "prepared", "worker-output"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--thread-count", type=int, dest="thread_count", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.threads = args.thread_count
        return worker(args)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        train = Path(tmp) / "train.txt"
        with open(args.text, encoding="utf8") as f:
            train.write_text("".join(line for _, line in zip(range(args.max_lines), f)), encoding="utf8")
        for config in args.configs:
            for precision in args.precisions:
                for threads in args.threads:
                    out = Path(tmp) / "worker.json"
                    cmd = [sys.executable, __file__, "--worker", "--text", args.text, "--config", config,
                           "--precision", precision, "--thread-count", str(threads), "--train", str(train),
                           "--prepared", str(Path(tmp) / f"prepared-{config}"), "--device", args.device,
                           "--steps", str(args.steps), "--warmup", str(args.warmup), "--worker-output", str(out)]
                    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
                    row = json.loads(out.read_text())
                    rows.append(row)
                    gpu = f", peak GPU {row['peak_gpu_mb']:,.0f} MiB" if row["peak_gpu_mb"] is not None else ""
                    print(f"{config} ({row['parameters']:,} parameters) on {args.device}, {precision}, "
                          f"{threads} thread(s): {row['tokens_per_s']:,.0f} tokens/s, "
                          f"{row['median_step_ms']:.1f} ms a step (median of {row['steps_timed']}), "
                          f"peak RSS {row['peak_rss_mb']:,.0f} MB{gpu}", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"text": args.text, "max_lines": args.max_lines, "rows": rows}, indent=2))
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
