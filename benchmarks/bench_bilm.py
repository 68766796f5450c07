"""Speed, memory and exactness of the biLM on CPU, on real text.

    python benchmarks/bench_bilm.py --threads 1             # both models, batch 32 and 64
    python benchmarks/bench_bilm.py --quick                 # a smoke run: small model, 16 sentences, one pass
    python benchmarks/bench_bilm.py --quick --synthetic     # the same without the corpus (no download)
    python benchmarks/bench_bilm.py --flops-only            # the FLOP counts per token (flops.py), no timing

For the original ELMo architecture and a small one, this writes random weights
of realistic scale in the AllenNLP/bilm-tf format, loads them the way users do,
and measures on a fixed, seeded sample of real sentences (by default of the
release pretraining text, corpus/release/pretrain/train.txt: see docs/pretraining_corpus.md for
how to make it), cut by spaCy's blank English tokenizer and sentencizer:

- tokens per second (real tokens, boundaries and padding not counted) of
  ``BiLM.forward`` over length-sorted batches, as the caller-facing helpers make
  them, with the token cache emptied before every pass;
- the FLOPs that pass performs (flops.py: the encoder once per distinct token,
  over the positions it covers; the LSTMs over the packed rows, boundaries
  included), and their rate as a fraction of this machine's fp32
  matrix-multiply ceiling (the best of several 2048 x 2048 products at the same
  thread count); the textbook rate (every token through the 50-position CNN),
  which credits work that never runs, beside it;
- the same tokens per second for the straightforward computation
  (``reference_layers``: per step, all 50 character positions of every slot, no
  cache, one direction at a time over the padded batch) on exactly the same
  batches, and the largest difference between the two;
- the peak resident memory of the process running each model (each model runs
  in its own subprocess).

Every timing is the best of several passes: other jobs on the machine only ever
make a pass slower. The results also go to ``benchmarks/results/bench_bilm.json``.
"""

import argparse
import copy
import datetime
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

import torch

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids, length_sorted_batches
from spacy_elmo.bilm.reference import reference_layers

sys.path.insert(0, str(Path(__file__).parent))
from flops import inference_flops, straightforward_flops, textbook_flops_per_token  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "bench_bilm.json"
# Made by `python -m spacy project assets && python -m experiments.data.fetch assets` then
# `python -m experiments.data.corpus assets corpus/release/pretrain`.
DEFAULT_TEXT = Path(__file__).parents[1] / "corpus" / "release" / "pretrain" / "train.txt"
SEED = 0

FILTERS = [(1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)]
MODELS = {
    # elmo_2x4096_512_2048cnn_2xhighway
    "original": BiLMOptions(filters=FILTERS, n_highway=2, lstm_dim=4096, projection_dim=512, n_layers=2),
    # elmo_2x1024_128_2048cnn_1xhighway
    "small": BiLMOptions(filters=FILTERS, n_highway=1, lstm_dim=1024, projection_dim=128, n_layers=2),
}

# ---------------------------------------------------------------------------
# The corpora: a seeded sample of real text; synthetic English-like sentences
# (Zipfian made-up words of at most 16 bytes) for runs without the data.
# ---------------------------------------------------------------------------


def real_sentences(path: Path, n: int, max_length: int = 100, seed: int = SEED) -> List[List[str]]:
    """A seeded sample of `n` sentences of the text in `path`, as spaCy's blank English
    tokenizer and sentencizer cut them (at most `max_length` tokens, as pretraining does)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    lines = [line for line in path.read_text(encoding="utf8").splitlines() if line.strip()]
    random.Random(seed).shuffle(lines)
    sentences: List[List[str]] = []
    for doc in nlp.pipe(lines[: 4 * n]):
        for sent in doc.sents:
            words = [t.text for t in sent if not t.is_space][:max_length]
            if words:
                sentences.append(words)
    random.Random(seed).shuffle(sentences)
    return sentences[:n]


# Frequent English words, most frequent first; rarer ranks are made-up words.
COMMON_WORDS = """
the of and to a in is that for it as was with be by on not he i this are or his
from at which but have an they you were her she there one all we their has been
would more will if no when what so can out said who about up its them than other
some into only two time could new these may first then do any like my now over
such our man me even most made after also did many before must through back
years where much your way well down should because each just those people how
too little state good very make world still own see men work long get here
between both life being under never day same another know while last might us
great old year off come since against go came right used take three states
himself few house use during without again place american around however home
small found thought went say part once general high upon school every does got
united left number course war until always away something fact though water less
public put think almost hand enough far took head yet government system better set
told nothing night end why called didn't eyes find going look asked later knew point
next city business give group toward young let room president side social given
present several order national possible rather second face per among form important
often things looked early white case john become large big need four within felt
along children saw best church ever least power development light thing seemed family
interest want members mind country area others done turned although open problem
""".split()
SYLLABLES = [
    "an",
    "ber",
    "cal",
    "con",
    "de",
    "der",
    "di",
    "el",
    "en",
    "er",
    "es",
    "fa",
    "gen",
    "in",
    "is",
    "ka",
    "lo",
    "man",
    "mi",
    "mo",
    "na",
    "ni",
    "o",
    "per",
    "pro",
    "ra",
    "re",
    "ri",
    "sa",
    "son",
    "ta",
    "ter",
    "ti",
    "to",
    "tra",
    "un",
    "ver",
    "vi",
    "wa",
    "zo",
]
SUFFIXES = ["", "", "", "s", "ed", "ing", "ly", "er", "tion"]
VOCAB_SIZE = 30000
ZIPF_EXPONENT = 1.0
MEAN_LENGTH = 22.0


def build_vocabulary(rng: random.Random) -> List[str]:
    """COMMON_WORDS, then made-up words (some capitalised, as names) up to VOCAB_SIZE."""
    words = list(COMMON_WORDS)
    seen = set(words)
    while len(words) < VOCAB_SIZE:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) + rng.choice(SUFFIXES)
        if rng.random() < 0.15:
            word = word.capitalize()
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def build_sentences(n: int, seed: int = SEED) -> List[List[str]]:
    """`n` tokenised sentences: Zipfian words, gamma-distributed lengths (mean
    about 22 tokens with punctuation), commas, a final full stop."""
    rng = random.Random(seed)
    vocab = build_vocabulary(rng)
    cumulative, total = [], 0.0
    for rank in range(1, len(vocab) + 1):
        total += rank**-ZIPF_EXPONENT
        cumulative.append(total)
    sentences = []
    for _ in range(n):
        n_words = max(1, min(90, round(rng.gammavariate(4.0, (MEAN_LENGTH - 1.6) / 4.0))))
        words = rng.choices(vocab, cum_weights=cumulative, k=n_words)
        for i in range(2, n_words - 1):
            if rng.random() < 0.06:
                words[i] += ","
        sentence = []
        for word in words:
            if word.endswith(","):
                sentence += [word[:-1], ","]
            else:
                sentence.append(word)
        sentence[0] = sentence[0].capitalize()
        sentences.append(sentence + ["."])
    return sentences


def sorted_batches(sentences: List[List[str]], batch_size: int) -> List[List[List[str]]]:
    """The sentences in batches of similar length, as `embed` makes them."""
    return [[sentences[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sentences], batch_size)]


# ---------------------------------------------------------------------------
# Weights of realistic scale
# ---------------------------------------------------------------------------


# Gate pre-activations of standard deviation GATE_STD, RECURRENT_SHARE of
# their variance from the recurrent state, and projected states of about
# STATE_STD: some gates saturate, most do not, the cell clip bites now and then
# and the recurrence is stable, as in trained language models. (With recurrent
# weights as strong as the input ones, this random recurrence is chaotic: it
# amplifies float32 rounding until any two correct float32 computations differ
# by 1e-4 on long sentences.)
GATE_STD = 1.5
RECURRENT_SHARE = 0.2
STATE_STD = 1.0


@torch.no_grad()
def set_realistic_weights(model: BiLM, words: List[str]) -> None:
    """Random weights whose activations have the scale of a trained biLM."""
    torch.manual_seed(SEED)
    o = model.options
    enc = model.token_encoder
    for highway in enc.highways:
        highway.b_carry.fill_(-1.0)  # bilm-tf starts the gates mostly carrying
    torch.nn.init.normal_(enc.projection.weight, std=o.n_filters**-0.5)
    enc.projection.bias.zero_()
    # Unit-scale token vectors (trained ones have entries of order 1).
    scale = model.encode_tokens(batch_to_ids([words[:2000]])[0]).std()
    enc.projection.weight.div_(scale)
    lstm = model.lstm
    p, c = o.projection_dim, o.lstm_dim
    for layer in range(o.n_layers):
        # Inputs and states have std ~1, so a pre-activation's variance is p std(W)^2 per matrix.
        torch.nn.init.normal_(lstm.W_input[layer], std=GATE_STD * math.sqrt((1 - RECURRENT_SHARE) / p))
        torch.nn.init.normal_(lstm.W_hidden[layer], std=GATE_STD * math.sqrt(RECURRENT_SHARE / p))
        torch.nn.init.normal_(lstm.bias[layer], std=0.5)
        # o * tanh(c) has a mean square of about 0.2.
        torch.nn.init.normal_(lstm.W_proj[layer], std=STATE_STD / math.sqrt(0.2 * c))


@torch.no_grad()
def activation_stats(model: BiLM, sentences: List[List[str]]) -> Dict[str, float]:
    """How the gates and clips behave, over every step of both directions and
    all layers: fractions of sigmoid gates saturated (< 0.05 or > 0.95) and near
    0.5 (0.4 .. 0.6), of cells at the cell clip, of states at the projection clip."""
    o = model.options
    lstm = model.lstm
    counts = {"gates_saturated": 0, "gates_near_half": 0, "cells_clipped": 0, "states_clipped": 0}
    n_gates = n_cells = n_states = 0
    bos, eos = model.encode_tokens(model.boundary_ids)
    for sentence in sentences:
        words = model.encode_tokens(batch_to_ids([sentence])[0])
        x = torch.cat([bos[None], words, eos[None]])
        inputs = torch.stack([x, x.flip(0)])  # (2, steps, p): both directions side by side
        for layer in range(o.n_layers):
            # The library's own step (BiLSTMStack.gates and .cell), one row per direction.
            gates_x = lstm.input_gates(layer, inputs)  # (2, 4, steps, c)
            h = x.new_zeros(2, 1, o.projection_dim)
            cell = x.new_zeros(2, 1, o.lstm_dim)
            hs = []
            for t in range(inputs.shape[1]):
                z = lstm.gates(layer, gates_x[:, :, t : t + 1], h)  # (2, 4, 1, c)
                sig = torch.sigmoid(z[:, [0, 2, 3]])  # the input, forget and output gates
                counts["gates_saturated"] += int(((sig < 0.05) | (sig > 0.95)).sum())
                counts["gates_near_half"] += int(((sig > 0.4) & (sig < 0.6)).sum())
                n_gates += sig.numel()
                h, cell = lstm.cell(layer, z, cell)
                # The cell returns clipped values: one at the clip was at or beyond it.
                if o.cell_clip:
                    counts["cells_clipped"] += int((cell.abs() >= o.cell_clip).sum())
                n_cells += cell.numel()
                if o.proj_clip:
                    counts["states_clipped"] += int((h.abs() >= o.proj_clip).sum())
                n_states += h.numel()
                hs.append(h[:, 0])
            out = torch.stack(hs, dim=1)  # (2, steps, p)
            if o.use_skip_connections and layer > 0:
                out = out + inputs
            inputs = out
    return {
        "gates_saturated": counts["gates_saturated"] / n_gates,
        "gates_near_half": counts["gates_near_half"] / n_gates,
        "cells_clipped": counts["cells_clipped"] / n_cells,
        "states_clipped": counts["states_clipped"] / n_states,
    }


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def matmul_ceiling(repeats: int = 10, dtype: torch.dtype = torch.float32) -> float:
    """GFLOP/s of the best of `repeats` 2048 x 2048 products in `dtype` (fp32 unless told; at
    torch's thread count)."""
    a, b = torch.randn(2048, 2048).to(dtype), torch.randn(2048, 2048).to(dtype)
    a @ b
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * 2048**3 / best / 1e9


def time_passes(run, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def n_tokens(batches: List[List[List[str]]]) -> int:
    return sum(len(s) for batch in batches for s in batch)


def proc_status_mb(key: str) -> float:
    """A memory line of /proc/self/status (``VmHWM``, ``VmRSS``) in MB; 0 where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mb() -> float:
    """This process's peak resident memory.

    On Linux, from VmHWM: ``getrusage(RUSAGE_SELF).ru_maxrss`` of a child
    process starts at its parent's peak (the high-water mark survives exec), so
    it would report the driver's memory rather than the model's.
    """
    return proc_status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def run_worker(args: argparse.Namespace) -> None:
    """Measure one model (in its own process, so that its peak RSS is its own)."""
    torch.set_num_threads(args.threads)
    model = BiLM.from_allennlp(args.model_dir).eval()
    options = model.options
    sentences = json.loads(Path(args.corpus_file).read_text(encoding="utf8"))
    batchings = {batch_size: sorted_batches(sentences, batch_size) for batch_size in args.batch_sizes}
    result: Dict = {"rows": {}}

    def our_pass(batches):
        model.token_cache.clear()  # every pass starts cold, as a fresh process would
        with torch.inference_mode():
            for batch in batches:
                model(batch_to_ids(batch))

    # Ours first, for every batch size, so that the peak RSS is ours: the straightforward
    # computation holds the CNN's output over 50 positions of every slot of a batch.
    for batch_size, batches in batchings.items():
        seconds = time_passes(lambda: our_pass(batches), args.repeats)
        performed = inference_flops(options, batches, model.token_cache.max_size)
        result["rows"][str(batch_size)] = {
            "tokens": n_tokens(batches),
            "seconds": seconds,
            "tokens_per_s": n_tokens(batches) / seconds,
            "performed_flops": performed,
        }
    result["peak_rss_mb"] = peak_rss_mb()
    if args.bf16:
        result["bf16"] = measure_bf16(model, sentences, batchings, args, result["rows"])

    # The straightforward computation on exactly the same batches.
    for batch_size, batches in batchings.items():
        seconds = time_passes(
            lambda: [reference_layers(model, batch_to_ids(b)) for b in batches], args.reference_repeats
        )
        result["rows"][str(batch_size)]["straightforward"] = {
            "seconds": seconds,
            "tokens_per_s": n_tokens(batches) / seconds,
            "flops": straightforward_flops(options, batches),
        }

    # Exactness, on every k-th batch of the first batch size (not timed).
    batches = batchings[args.batch_sizes[0]]
    stride = max(1, round(len(sentences) / max(args.check_sentences, 1)))
    subset = batches[::stride]
    max_diff = max_value = 0.0
    with torch.inference_mode():
        for batch in subset:
            ids = batch_to_ids(batch)
            expected = reference_layers(model, ids)
            max_diff = max(max_diff, float((model(ids).layers - expected).abs().max()))
            max_value = max(max_value, float(expected.abs().max()))
    result["exactness"] = {
        "batch_size": args.batch_sizes[0],
        "sentences": sum(len(b) for b in subset),
        "tokens": n_tokens(subset),
        "max_abs_diff": max_diff,
        "max_abs_value": max_value,
    }
    # A yardstick for both: the straightforward computation in float64, on the
    # longest sentences (where float32 rounding accumulates most).
    longest = sorted(sentences, key=len, reverse=True)[: args.float64_sentences]
    ids = batch_to_ids(longest)
    with torch.inference_mode():
        exact = reference_layers(copy.deepcopy(model).double(), ids)
        ours = model(ids).layers.double()
        straightforward = reference_layers(model, ids).double()
    result["float64"] = {
        "sentences": len(longest),
        "tokens": sum(map(len, longest)),
        "ours_max_abs_error": float((ours - exact).abs().max()),
        "straightforward_max_abs_error": float((straightforward - exact).abs().max()),
    }
    with torch.inference_mode():
        result["activations"] = activation_stats(model, sentences[:8])
    Path(args.worker_output).write_text(json.dumps(result))


def measure_bf16(model: BiLM, sentences, batchings, args: argparse.Namespace, fp32_rows: Dict) -> Dict:
    """`precision = "bf16"` (autocast: the products and the CNN in bfloat16, the cell state and
    the outputs float32) beside fp32: tokens/s on the same batches, timed passes of both
    alternated, and the largest error against float64 on the longest sentences."""
    # Imported here: bench_pretrain.py imports this module under an older revision of the package too.
    from spacy_elmo.bilm.precision import cpu_has_bf16, precision

    if not cpu_has_bf16():
        return {"supported": False}
    rows = {}
    for batch_size, batches in batchings.items():

        def bf16_pass():
            model.token_cache.clear()
            with torch.inference_mode(), precision("cpu", "bf16"):
                for batch in batches:
                    model(batch_to_ids(batch))

        def fp32_pass():
            model.token_cache.clear()
            with torch.inference_mode():
                for batch in batches:
                    model(batch_to_ids(batch))

        bf16_s, fp32_s = math.inf, math.inf
        for _ in range(args.repeats):  # alternated, so that both see the same load
            bf16_s, fp32_s = min(bf16_s, time_passes(bf16_pass, 1)), min(fp32_s, time_passes(fp32_pass, 1))
        tokens = n_tokens(batches)
        rows[str(batch_size)] = {
            "tokens_per_s": tokens / bf16_s,
            "fp32_tokens_per_s": tokens / fp32_s,
            "vs_fp32": fp32_s / bf16_s,
        }
    longest = sorted(sentences, key=len, reverse=True)[: args.float64_sentences]
    ids = batch_to_ids(longest)
    model.token_cache.clear()
    with torch.inference_mode():
        exact = reference_layers(copy.deepcopy(model).double(), ids)
        with precision("cpu", "bf16"):
            low = model(ids).layers.double()
    model.token_cache.clear()
    error = float((low - exact).abs().max())
    return {
        "supported": True,
        "rows": rows,
        "max_abs_error": error,
        "max_relative_error": error / float(exact.abs().max()),
    }


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def measure_model(name: str, sentences: List[List[str]], args: argparse.Namespace, workdir: Path) -> Dict:
    if args.weights:  # a trained biLM as it is
        model_dir = Path(args.weights)
    else:
        model_dir = workdir / name
        torch.manual_seed(SEED)
        model = BiLM(MODELS[name]).eval()
        words = sorted({w for s in sentences for w in s})
        set_realistic_weights(model, words)
        model.save_allennlp(model_dir)
        del model
    output = workdir / f"{name}.json"
    command = [
        sys.executable,
        __file__,
        "--worker",
        "--model-dir",
        str(model_dir),
        "--worker-output",
        str(output),
        "--corpus-file",
        str(workdir / "sentences.json"),
        "--threads",
        str(args.threads),
        "--repeats",
        str(args.repeats),
        "--reference-repeats",
        str(args.reference_repeats),
        "--check-sentences",
        str(args.check_sentences),
        "--float64-sentences",
        str(args.float64_sentences),
        "--batch-sizes",
        *map(str, args.batch_sizes),
        *(["--bf16"] if args.bf16 else []),
    ]
    subprocess.run(command, check=True)
    return json.loads(output.read_text())


def load_corpus(args: argparse.Namespace) -> Tuple[List[List[str]], str]:
    """The sentences to measure on, and where they come from."""
    if args.synthetic:
        return build_sentences(args.sentences), "synthetic (made-up words of at most 16 bytes)"
    path = Path(args.text)
    if not path.exists():
        if args.quick:
            print(f"{path} not found: the smoke run uses the synthetic corpus")
            return build_sentences(args.sentences), "synthetic (made-up words of at most 16 bytes)"
        sys.exit(
            f"{path} not found. Make it with "
            "`python -m spacy project assets && python -m experiments.data.fetch assets` and "
            f"`python -m experiments.data.corpus assets corpus/release/pretrain`, pass another text "
            f"with --text, or --synthetic for the made-up corpus"
        )
    return real_sentences(path, args.sentences), str(path)


def main(args: argparse.Namespace) -> Dict:
    torch.set_num_threads(args.threads)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    load_before = load_average()
    sentences, source = load_corpus(args)
    n_words = sum(len(s) for s in sentences)
    token_bytes = [len(w.encode("utf8")) for s in sentences for w in s]
    ceiling = matmul_ceiling()
    models: Dict[str, Dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench_bilm.") as tmp:
        (Path(tmp) / "sentences.json").write_text(json.dumps(sentences), encoding="utf8")
        for name in [Path(args.weights).name] if args.weights else args.models:
            models[name] = measure_model(name, sentences, args, Path(tmp))
    ceiling_after = matmul_ceiling()
    best_ceiling = max(ceiling, ceiling_after)
    for name, result in models.items():
        options = BiLMOptions.from_file(Path(args.weights) / "options.json") if args.weights else MODELS[name]
        textbook = textbook_flops_per_token(options)
        result["textbook_mflop_per_token"] = {k: v / 1e6 for k, v in textbook.items()}
        for row in result["rows"].values():
            seconds, tokens, ref = row["seconds"], row["tokens"], row["straightforward"]
            row["performed_mflop_per_token"] = row["performed_flops"]["total"] / tokens / 1e6
            row["performed_gflops"] = row["performed_flops"]["total"] / seconds / 1e9
            row["performed_fraction_of_ceiling"] = row["performed_gflops"] / best_ceiling
            row["textbook_gflops"] = textbook["total"] * tokens / seconds / 1e9
            row["textbook_fraction_of_ceiling"] = row["textbook_gflops"] / best_ceiling
            row["speedup"] = ref["seconds"] / seconds
            ref["mflop_per_token"] = ref["flops"] / tokens / 1e6
            ref["gflops"] = ref["flops"] / ref["seconds"] / 1e9
            ref["fraction_of_ceiling"] = ref["gflops"] / best_ceiling
    report = {
        "date": started,
        "command": " ".join(["python", "benchmarks/bench_bilm.py", *sys.argv[1:]]),
        "machine": {
            "cpu": cpu_name(),
            "cores": os.cpu_count(),
            "threads": args.threads,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "load_average_before": load_before,
            "load_average_after": load_average(),
        },
        "corpus": {
            "source": source,
            "seed": SEED,
            "sentences": len(sentences),
            "tokens": n_words,
            "mean_length": n_words / len(sentences),
            "distinct_tokens": len({w for s in sentences for w in s}),
            "longest_token_bytes": max(token_bytes),
            "tokens_over_16_bytes": sum(1 for b in token_bytes if b > 16),
        },
        "gemm_ceiling_gflops": best_ceiling,
        "gemm_ceiling_gflops_before_after": [ceiling, ceiling_after],
        "models": models,
    }
    print_report(report)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2))
    print(f"\nwritten to {output}")
    return report


def print_report(report: Dict) -> None:
    m, corpus = report["machine"], report["corpus"]
    print(
        f"\nbiLM benchmark, {report['date']}: {m['cpu']}, {m['cores']} cores, {m['threads']} thread(s), "
        f"torch {m['torch']}"
    )
    print(f"command: {report['command']}")
    print(f"load average (1, 5, 15 min) before: {m['load_average_before']}, after: {m['load_average_after']}")
    print(
        f"corpus: {corpus['source']}, seed {corpus['seed']}: {corpus['sentences']} sentences, {corpus['tokens']} "
        f"tokens (mean {corpus['mean_length']:.1f}), {corpus['distinct_tokens']} distinct, longest token "
        f"{corpus['longest_token_bytes']} bytes, {corpus['tokens_over_16_bytes']} tokens over 16 bytes; "
        f"length-sorted batches, token cache emptied before each pass"
    )
    before, after = report["gemm_ceiling_gflops_before_after"]
    print(
        f"fp32 GEMM ceiling (2048 x 2048, {m['threads']} thread(s)): {report['gemm_ceiling_gflops']:.1f} GFLOP/s "
        f"(before {before:.1f}, after {after:.1f})"
    )
    for name, r in report["models"].items():
        f = r["textbook_mflop_per_token"]
        print(
            f"\n{name}: textbook {f['total']:.1f} MFLOP/token = char CNN over 50 positions {f['char_cnn']:.1f} "
            f"+ highway {f['highway']:.1f} + projection {f['projection']:.1f} + LSTM {f['lstm']:.1f}"
        )
        for batch_size, row in r["rows"].items():
            p, tokens = row["performed_flops"], row["tokens"]
            ref = row["straightforward"]
            print(
                f"  batch {batch_size}: performed {row['performed_mflop_per_token']:.1f} MFLOP/token = encoder "
                f"{p['encoder'] / tokens / 1e6:.1f} (run on {p['encoded_tokens']} distinct tokens, "
                f"{p['encoded_tokens'] / tokens:.1%} of tokens) + LSTM {p['lstm'] / tokens / 1e6:.1f}; "
                f"straightforward {ref['tokens_per_s']:.1f} tokens/s on the same batches, performing "
                f"{ref['mflop_per_token']:.1f} MFLOP/token ({ref['gflops']:.1f} GFLOP/s, "
                f"{ref['fraction_of_ceiling']:.1%} of ceiling)"
            )
        a = r["activations"]
        print(
            f"  activations: sigmoid gates saturated {a['gates_saturated']:.1%}, near 0.5 {a['gates_near_half']:.1%}; "
            f"cells at the clip {a['cells_clipped']:.2%}, states at the clip {a['states_clipped']:.2%}"
        )
        check, f64 = r["exactness"], r["float64"]
        print(
            f"  max |ours - straightforward| = {check['max_abs_diff']:.2e} (largest |value| "
            f"{check['max_abs_value']:.2f}) on {check['sentences']} sentences ({check['tokens']} tokens), "
            f"batch {check['batch_size']}"
        )
        print(
            f"  against float64 on the {f64['sentences']} longest sentences ({f64['tokens']} tokens): "
            f"max error ours {f64['ours_max_abs_error']:.2e}, "
            f"straightforward float32 {f64['straightforward_max_abs_error']:.2e}"
        )
        low = r.get("bf16")
        if low and not low["supported"]:
            print("  bf16: this CPU has no bfloat16 instructions (AMX or AVX-512 BF16): not measured")
        elif low:
            for batch_size, row in low["rows"].items():
                print(
                    f"  bf16, batch {batch_size}: {row['tokens_per_s']:.1f} tokens/s against fp32 "
                    f"{row['fp32_tokens_per_s']:.1f} in alternated passes: {row['vs_fp32']:.2f}x"
                )
            print(
                f"  bf16 against float64 on the same longest sentences: max error {low['max_abs_error']:.2e}, "
                f"{low['max_relative_error']:.1e} of the largest value"
            )
    header = [
        "model",
        "batch",
        "tokens/s",
        "performed MFLOP/token",
        "performed GFLOP/s",
        "performed of ceiling",
        "textbook of ceiling",
        "straightforward tokens/s",
        "vs straightforward",
        "peak RSS",
        "max abs diff",
    ]
    rows = []
    for name, r in report["models"].items():
        for batch_size, row in r["rows"].items():
            rows.append(
                [
                    name,
                    batch_size,
                    f"{row['tokens_per_s']:.1f}",
                    f"{row['performed_mflop_per_token']:.1f}",
                    f"{row['performed_gflops']:.1f}",
                    f"{row['performed_fraction_of_ceiling']:.1%}",
                    f"{row['textbook_fraction_of_ceiling']:.1%}",
                    f"{row['straightforward']['tokens_per_s']:.1f}",
                    f"{row['speedup']:.2f}x",
                    f"{r['peak_rss_mb']:.0f} MB",
                    f"{r['exactness']['max_abs_diff']:.1e}",
                ]
            )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, ["-" * w for w in widths], *rows]:
        print(
            "| "
            + " | ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            + " |"
        )
    print(
        "\n(textbook: every token through the CNN over 50 positions, no boundaries; it credits work that does not run)"
    )
    print("\ntargets (batch 32):")
    for name, r in report["models"].items():
        row = r["rows"].get("32")
        if name == "original" and row:
            fraction, rss = row["performed_fraction_of_ceiling"], r["peak_rss_mb"]
            print(
                f"  original: performed FLOPs at {fraction:.1%} of ceiling "
                f"(>= 60%: {'met' if fraction >= 0.6 else 'NOT met'}); "
                f"peak RSS {rss:.0f} MB (<= 1200 MB: {'met' if rss <= 1200 else 'NOT met'})"
            )
        if name == "small" and row:
            speedup = row["speedup"]
            print(
                f"  small: {speedup:.2f}x the straightforward computation "
                f"(>= 3x: {'met' if speedup >= 3 else 'NOT met'})"
            )
        diff = r["exactness"]["max_abs_diff"]
        print(f"  {name}: max abs diff {diff:.1e} (<= 1e-5: {'met' if diff <= 1e-5 else 'NOT met'})")


def print_flop_counts(args: argparse.Namespace) -> None:
    """Print the FLOP counts per token of the corpus (flops.py), without timing anything."""
    sentences = build_sentences(args.sentences) if args.synthetic else real_sentences(Path(args.text), args.sentences)
    tokens = sum(map(len, sentences))
    print(f"{'synthetic' if args.synthetic else args.text}: {len(sentences)} sentences, {tokens} tokens")
    for name in args.models:
        options = MODELS[name]
        textbook = textbook_flops_per_token(options)["total"]
        for batch_size in args.batch_sizes:
            batches = sorted_batches(sentences, batch_size)
            performed = inference_flops(options, batches)
            print(
                f"{name} batch {batch_size}: textbook {textbook / 1e6:.1f} MFLOP/token, performed "
                f"{performed['total'] / tokens / 1e6:.1f} (encoder {performed['encoder'] / tokens / 1e6:.1f} on "
                f"{performed['encoded_tokens'] / tokens:.1%} of tokens, LSTM {performed['lstm'] / tokens / 1e6:.1f}), "
                f"straightforward {straightforward_flops(options, batches) / tokens / 1e6:.1f}"
            )


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: small model, 16 sentences, one pass (on the synthetic corpus when the text is absent)",
    )
    parser.add_argument(
        "--text",
        default=str(DEFAULT_TEXT),
        help="raw text to sample sentences from (default: the release pretraining text)",
    )
    parser.add_argument(
        "--synthetic", action="store_true", help="the synthetic corpus (made-up words, no download) instead of --text"
    )
    parser.add_argument("--sentences", type=int, default=512, help="corpus size (default 512)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["original", "small"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[32, 64])
    parser.add_argument("--repeats", type=int, default=3, help="passes per measurement; the best counts")
    parser.add_argument(
        "--reference-repeats",
        type=int,
        default=2,
        help="passes of the slow straightforward computation per batch size; the best counts",
    )
    parser.add_argument(
        "--check-sentences",
        type=int,
        default=128,
        help="about how many sentences the (untimed) comparison with the straightforward computation runs on",
    )
    parser.add_argument(
        "--float64-sentences",
        type=int,
        default=8,
        help="how many of the longest sentences the float64 yardstick runs on",
    )
    parser.add_argument(
        "--weights",
        help="a trained biLM's folder (options.json + weights.hdf5) to measure instead of the random-weight --models",
    )
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="also time precision bf16 beside fp32 and give its error against float64 (CPUs with AMX or AVX-512 BF16)",
    )
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument(
        "--flops-only",
        action="store_true",
        help="print the FLOP counts per token of the corpus (flops.py), without timing anything",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--worker-output", help=argparse.SUPPRESS)
    parser.add_argument("--corpus-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.sentences, args.models, args.batch_sizes = min(args.sentences, 16), ["small"], [32]
        args.repeats, args.check_sentences, args.reference_repeats, args.float64_sentences = 1, 16, 1, 2
    return args


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.worker:
        run_worker(arguments)
    elif arguments.flops_only:
        print_flop_counts(arguments)
    else:
        main(arguments)
