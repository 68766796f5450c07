"""Speed and memory of biLM pretraining (``spacy_elmo pretrain``) on real text, this code beside
a reference version of it, in one run.

    python benchmarks/bench_pretrain.py --text corpus/release/pretrain/train.txt \
        --configs bilm_release --precisions fp32 bf16 --threads 1 2          # CPU
    python benchmarks/bench_pretrain.py --text corpus/release/pretrain/train.txt \
        --configs bilm_small bilm_release --device cuda --precisions fp32 tf32 bf16 --reference none
    python benchmarks/bench_pretrain.py --text corpus/v2/pretrain/train.txt --configs bilm_release \
        --device cuda --precisions fp32 --threads 1 --reference none --lstm-paths own torch \
        --set model.cell_clip=0 --set model.proj_clip=0       # cuDNN against the step-by-step LSTMs

The reference (--reference, a git revision; by default REFERENCE, the code before the
hand-written LSTM backward pass, the one-pass softmax and bf16 on the CPU) is extracted with
``git archive`` into a temporary folder and imported from there, so both run the same batches
through the same benchmark code; it runs in fp32 (before this change the CPU computed in fp32
whatever the setting said). Each setting runs in its own process (so that its peak memory is its
own): the config's model trains for --steps steps on the first --max-lines lines of the text
(tokenised once, before any setting runs, into a prepared folder the runs share), and the report
gives, over the steps after the first --warmup:

- the median step time and the tokens/s (targets of one direction, as the training log counts
  them), and the ratio to the tokens/s of the first row at the same config and thread count: the
  reference's fp32 row, or without a reference the current code's first precision and LSTM path;

--lstm-paths runs the current code's LSTM layers as its own step-by-step code ("own") and, for a
biLM without clipping, as torch.nn.LSTM ("torch": cuDNN on a GPU; spacy_elmo/bilm/recurrence/torch_lstm.py);
--set KEY=VALUE overrides a config setting in every run (model.cell_clip=0 and model.proj_clip=0
for the torch path).
- the performed FLOPs (flops.py: the encoder over each batch's distinct words and the positions
  they reach, the LSTMs over the packed rows, the softmax as it runs, the backward pass as twice
  the forward) and their rate as a fraction of the matrix-product ceiling of the same precision
  (2048 x 2048, fp32 or bf16) measured in the same process at the same thread count (CPU only);
- the peak resident memory (VmHWM) and the resident memory before training started (imports and
  the torch runtime), and on a GPU the peak GPU memory.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Dict, Optional

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import cpu_name, load_average, matmul_ceiling, peak_rss_mb, proc_status_mb  # noqa: E402
from flops import training_step_flops  # noqa: E402

REPOSITORY = Path(__file__).parent.parent
CONFIGS = REPOSITORY / "configs"
RESULTS = Path(__file__).parent / "results" / "bench_pretrain.json"
# The last revision before the hand-written LSTM backward pass (spacy_elmo/bilm/recurrence/backward.py).
REFERENCE = "47f61f1"


def worker(args) -> None:
    import numpy
    import torch

    import spacy_elmo
    from spacy_elmo.bilm.char_ids import PAD_CHAR
    from spacy_elmo.training.data import lm_batches
    from spacy_elmo.training.pretrain import pretrain

    rss_before = proc_status_mb("VmRSS")
    ceiling = None
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
        ceiling = matmul_ceiling(dtype=torch.bfloat16 if args.precision == "bf16" else torch.float32)
    # What each step's batch holds, for its FLOP count (recorded as the trainer builds it; the
    # run has no dev set, so every batch built is a training step's).
    shapes = []
    make_batch = lm_batches.CorpusBatches.batch

    def recorded_batch(self, indices):
        batch = make_batch(self, indices)
        shapes.append(
            (
                int(batch.char_ids.shape[0]),
                int((batch.char_ids != PAD_CHAR + 1).sum(dim=1).max()),
                list(batch.batch_sizes),
                batch.targets.numpy().ravel().astype(numpy.int32),
            )
        )
        return batch

    lm_batches.CorpusBatches.batch = recorded_batch
    times, tokens, last = [], [], [time.perf_counter(), 0]

    def clock(state, lm):
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        now = time.perf_counter()
        times.append(now - last[0])
        tokens.append(state.tokens - last[1])
        last[0], last[1] = now, state.tokens

    torch_lstm_layers = [0]  # layers run as torch.nn.LSTM, to show which path ran
    try:
        from spacy_elmo.bilm.recurrence import stack as recurrence
    except ImportError:  # a reference from before the recurrence package has only its own steps
        recurrence = None
    if recurrence is not None:
        devices = (torch.device(args.device).type,) if args.lstm_path == "torch" else ()
        make_stack = recurrence.BiLSTMStack.__init__

        def made_with_paths(stack, *init_args, **init_kwargs):  # every stack pretrain() makes
            make_stack(stack, *init_args, **init_kwargs)
            stack.use_paths(replace(stack.paths, torch_lstm_devices=devices))

        recurrence.BiLSTMStack.__init__ = made_with_paths
        layer = recurrence.lstm_layer_torch

        def counted_layer(*layer_args):
            torch_lstm_layers[0] += 1
            return layer(*layer_args)

        recurrence.lstm_layer_torch = counted_layer
    overrides = {
        **json.loads(args.settings),
        "paths.train": args.train,
        "paths.dev": None,
        "training.max_steps": args.steps,
        "training.max_epochs": 0,
        "training.eval_every": 0,
        "training.checkpoint_every": args.steps,
        "training.precision": args.precision,
        "system.threads": args.threads,
        "corpus.prepared_dir": args.prepared,
    }
    with tempfile.TemporaryDirectory() as tmp:
        result = pretrain(
            CONFIGS / f"{args.config}.cfg",
            Path(tmp) / "run",
            overrides=overrides,
            device=args.device,
            progress=False,
            on_step=clock,
        )
    if len(shapes) != len(times):
        sys.exit(f"{len(shapes)} batches built for {len(times)} steps: the FLOP count would not match the steps")
    options, head = result.model.bilm.options, result.model.softmax
    softmax = {"n_classes": head.n_classes, "kind": head.kind, "cutoffs": head.cutoffs, "div_value": head.div_value}
    # Before the hand-written backward pass, LSTM steps of 1 to 3 rows ran as 4 (products.py).
    stack = result.model.bilm.lstm
    min_rows = 1 if hasattr(stack, "paths") or hasattr(stack, "hand_written_backward") else 4
    flops = [
        training_step_flops(options, n_words, longest, batch_sizes, softmax, targets, min_rows)
        for n_words, longest, batch_sizes, targets in shapes
    ]
    timed, counted, performed = times[args.warmup :], tokens[args.warmup :], flops[args.warmup :]
    gflops = sum(performed) / sum(timed) / 1e9
    report = {
        "code": str(Path(spacy_elmo.__file__).parent),
        "config": args.config,
        "device": args.device,
        "precision": args.precision,
        "threads": args.threads,
        "lstm_path": args.lstm_path,
        "settings": json.loads(args.settings),
        "torch_lstm_layers": torch_lstm_layers[0],
        "cpu_bf16": bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported()),
        "parameters": result.parameters,
        "steps_timed": len(timed),
        "median_step_ms": 1000 * sorted(timed)[len(timed) // 2],
        "tokens_per_s": sum(counted) / sum(timed),
        "performed_mflop_per_token": sum(performed) / sum(counted) / 1e6,
        "performed_gflops": gflops,
        "gemm_ceiling_gflops": ceiling,  # in the row's precision (bf16 for bf16)
        "performed_fraction_of_ceiling": gflops / ceiling if ceiling else None,
        "rss_before_training_mb": rss_before,
        "peak_rss_mb": peak_rss_mb(),
        "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if args.device.startswith("cuda") else None,
    }
    Path(args.worker_output).write_text(json.dumps(report))


def prepare(train: Path, config: str, prepared: Path, overrides: Optional[Dict] = None) -> None:
    """Tokenise the text as the config's run will (reused by every run of that config), so that
    no run's memory or time includes it."""
    from spacy_elmo.training.data.prepared import prepare_corpus
    from spacy_elmo.training.data.reader import find_files
    from spacy_elmo.training.run.config import load_config

    settings = load_config(CONFIGS / f"{config}.cfg", {**(overrides or {}), "paths.train": str(train)})
    prepare_corpus(
        find_files(settings.train_paths),
        settings.corpus.tokenizer,
        prepared / "train",
        progress=False,
        log=lambda message: None,
    )


def extract_reference(revision: str, folder: Path) -> Path:
    """The package `spacy_elmo` as it was at `revision`, in `folder`; exits with a message if git
    or the revision is not there."""
    folder.mkdir(parents=True)
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPOSITORY), "archive", revision, "spacy_elmo"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as err:
        stderr = getattr(err, "stderr", b"") or b""
        sys.exit(
            f"Could not extract the reference revision '{revision}' ({stderr.decode().strip() or err}): "
            "run from a git clone with its history, or pass --reference none"
        )
    return folder


def run_worker(
    args,
    config: str,
    precision: str,
    threads: int,
    lstm_path: str,
    settings: Dict,
    train: Path,
    tmp: Path,
    code_name: str,
    code_dir,
) -> Dict:
    """One setting's run in its own process, with `code_dir`'s spacy_elmo (None: this one)."""
    out = tmp / "worker.json"
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--text",
        args.text,
        "--config",
        config,
        "--precision",
        precision,
        "--thread-count",
        str(threads),
        "--train",
        str(train),
        "--prepared",
        str(tmp / f"prepared-{config}"),
        "--device",
        args.device,
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--worker-output",
        str(out),
        "--lstm-path",
        lstm_path,
        "--settings",
        json.dumps(settings),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if code_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code_dir), env.get("PYTHONPATH", "")])
    subprocess.run(cmd, check=True, env=env)
    row = json.loads(out.read_text())
    expected = code_dir if code_dir is not None else REPOSITORY
    if not Path(row["code"]).resolve().is_relative_to(Path(expected).resolve()):
        sys.exit(f"the {code_name} run imported spacy_elmo from {row['code']}, not {expected}")
    row["code_name"] = code_name
    row["ceiling_precision"] = "bf16" if precision == "bf16" and args.device == "cpu" else "fp32"
    return row


def describe(row: Dict) -> str:
    gpu = f", peak GPU {row['peak_gpu_mb']:,.0f} MiB" if row["peak_gpu_mb"] is not None else ""
    utilisation = (
        f", {row['performed_fraction_of_ceiling']:.1%} of the {row['ceiling_precision']} GEMM ceiling "
        f"({row['gemm_ceiling_gflops']:.1f} GFLOP/s)"
        if row["performed_fraction_of_ceiling"]
        else ""
    )
    ratio = f" ({row['vs_reference']:.2f}x the first row)" if row.get("vs_reference") else ""
    return (
        f"{row['config']} [{row['code_name']}, {row.get('lstm_path', 'own')} LSTMs] on {row['device']}, "
        f"{row['precision']}, {row['threads']} "
        f"thread(s): {row['tokens_per_s']:,.0f} tokens/s{ratio}, {row['median_step_ms']:.1f} ms a step "
        f"(median of {row['steps_timed']}); performed {row['performed_mflop_per_token']:.1f} MFLOP/token, "
        f"{row['performed_gflops']:.1f} GFLOP/s{utilisation}; peak RSS {row['peak_rss_mb']:,.0f} MB "
        f"({row['rss_before_training_mb']:,.0f} MB before training){gpu}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", required=True, help="raw training text, one document or paragraph a line")
    parser.add_argument("--max-lines", type=int, default=4000)
    parser.add_argument("--configs", nargs="+", default=["bilm_release"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reference", default=REFERENCE, help="git revision to run beside this code (fp32), or 'none'")
    parser.add_argument(
        "--lstm-paths",
        nargs="+",
        choices=["own", "torch"],
        default=["own"],
        help="the current code's LSTM layers as its own steps, or as torch.nn.LSTM (unclipped biLMs)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config setting for every run, e.g. model.cell_clip=0 (repeatable)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("config", "precision", "train", "prepared", "worker-output", "lstm-path", "settings"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--thread-count", type=int, dest="thread_count", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.threads = args.thread_count
        return worker(args)
    command = " ".join(["python", "benchmarks/bench_pretrain.py", *(sys.argv[1:] if argv is None else argv)])
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {command}")
    print(f"CPU: {cpu_name()}, {os.cpu_count()} logical cores")
    load_before = load_average()
    print(f"load average (1, 5, 15 min) before: {load_before}", flush=True)
    settings = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            settings[key] = json.loads(value)  # numbers, true/false/null, lists
        except ValueError:
            settings[key] = value  # a string
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        codes = [("current", None)]
        if args.reference.lower() != "none":
            codes.insert(0, (f"reference {args.reference}", extract_reference(args.reference, Path(tmp) / "reference")))
        train = Path(tmp) / "train.txt"
        with open(args.text, encoding="utf8") as f:
            train.write_text("".join(line for _, line in zip(range(args.max_lines), f)), encoding="utf8")
        for config in args.configs:
            prepare(train, config, Path(tmp) / f"prepared-{config}", settings)
            for threads in args.threads:
                reference_speed = None  # the first row's, at this config and thread count
                for code_name, code_dir in codes:
                    # The reference computes in fp32 on the CPU whatever the setting, with its own LSTM steps.
                    precisions = ["fp32"] if code_dir is not None and args.device == "cpu" else args.precisions
                    for precision in precisions:
                        for lstm_path in ["own"] if code_dir is not None else args.lstm_paths:
                            row = run_worker(
                                args,
                                config,
                                precision,
                                threads,
                                lstm_path,
                                settings,
                                train,
                                Path(tmp),
                                code_name,
                                code_dir,
                            )
                            reference_speed = reference_speed or row["tokens_per_s"]
                            row["vs_reference"] = row["tokens_per_s"] / reference_speed
                            rows.append(row)
                            print(describe(row), flush=True)
    load_after = load_average()
    print(f"load average (1, 5, 15 min) after: {load_after}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "command": command,
                "text": args.text,
                "max_lines": args.max_lines,
                "cpu": cpu_name(),
                "reference": args.reference,
                "load_average_before": load_before,
                "load_average_after": load_after,
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
