import json
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids
from spacy_elmo.bilm.char_ids import PAD_CHAR
from spacy_elmo.training.data.lm_batches import collate
from spacy_elmo.training.objective.lm import PretrainingLM
from spacy_elmo.training.objective.softmax import SoftmaxHead

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
BENCHMARK = BENCHMARKS / "bench_bilm.py"
sys.path.insert(0, str(BENCHMARKS))
from bench_bilm import sorted_batches  # noqa: E402
from flops import inference_flops, training_step_flops  # noqa: E402

OPTIONS = BiLMOptions(filters=[(1, 32), (2, 32), (3, 64)], n_highway=1, lstm_dim=64, projection_dim=16, n_layers=2)
SENTENCES = [
    ["The", "BBC", "reported", "it", "at", "https://www.bbc.co.uk/news/uk-politics-12345678", "."],
    ["A", "sentence", ",", "and", "another", "sentence", "with", "the", "same", "words", "."],
    ["International", "Organization", "for", "Standardization", "(", "ISO", ")"],
    ["Short", "."],
    ["a"],
    ["The", "same", "words", "again", ",", "the", "same", "."],
]


class CountedProducts(TorchDispatchMode):
    """FLOPs of the matrix products and convolutions torch runs (2 per multiply-add)."""

    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        op = func._overloadpacket
        if op in flop_registry:  # mm, addmm, bmm, baddbmm, convolution
            self.flops += flop_registry[op](*args, **kwargs, out_val=out)
        elif op is torch.ops.aten.baddbmm_:  # in place, in the hand-written LSTM layer
            self.flops += flop_registry[torch.ops.aten.baddbmm](*args, **kwargs, out_val=out)
        elif str(op) == "aten.linear":  # not decomposed on the CPU, and not in the registry
            self.flops += 2 * out.numel() * args[1].shape[1]
        elif str(op) == "aten.conv1d":
            self.flops += 2 * out.numel() * args[1].shape[1] * args[1].shape[2]
        return out


@pytest.mark.parametrize("batch_size", [2, 4, 32])
def test_performed_count_is_what_the_model_runs(batch_size):
    torch.manual_seed(0)
    model = BiLM(OPTIONS).eval()
    batches = sorted_batches(SENTENCES, batch_size)
    counted = inference_flops(OPTIONS, batches, model.token_cache.max_size)
    with torch.inference_mode(), CountedProducts() as run:
        for batch in batches:
            model(batch_to_ids(batch))
    assert run.flops == counted["total"]
    assert counted["encoded_tokens"] == len({w for s in SENTENCES for w in s}) + 2  # and <S>, </S>


@pytest.mark.parametrize("kind", ["adaptive", "full"])
def test_training_count_is_three_times_what_the_forward_runs(kind):
    torch.manual_seed(0)
    n_classes = 300
    head = SoftmaxHead(OPTIONS.projection_dim, n_classes, kind, [50, 150], 4.0)
    lm = PretrainingLM(BiLM(OPTIONS), head, 0.0)
    rng = numpy.random.default_rng(0)
    words = [f"w{i}" * (1 + i % 7) for i in range(400)]
    sentences = [rng.integers(0, 400, size=n) for n in (12, 9, 9, 5, 3, 1)]
    batch = collate(sentences, words, numpy.minimum(numpy.arange(400), n_classes - 1), 0, 1, 50)
    with CountedProducts() as run:
        lm(batch)
    softmax = {"n_classes": n_classes, "kind": head.kind, "cutoffs": head.cutoffs, "div_value": head.div_value}
    longest = int((batch.char_ids != PAD_CHAR + 1).sum(dim=1).max())
    counted = training_step_flops(
        OPTIONS, batch.char_ids.shape[0], longest, batch.batch_sizes, softmax, batch.targets.numpy().ravel()
    )
    assert 3 * run.flops == counted


@pytest.mark.slow
def test_quick_benchmark_runs_and_agrees_with_the_reference(tmp_path):
    output = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", "--synthetic", "--sentences", "8", "--output", str(output)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "tokens/s" in result.stdout
    report = json.loads(output.read_text())
    small = report["models"]["small"]
    row = small["rows"]["32"]
    assert report["corpus"]["sentences"] == 8 and report["corpus"]["source"].startswith("synthetic")
    assert row["tokens_per_s"] > 0 and row["straightforward"]["tokens_per_s"] > 0
    assert small["exactness"]["max_abs_diff"] <= 1e-5
    assert small["peak_rss_mb"] > 0
    assert 40 < small["textbook_mflop_per_token"]["total"] < 50
    # The model does less than the textbook computation, the straightforward one more.
    assert row["performed_mflop_per_token"] < small["textbook_mflop_per_token"]["total"]
    assert row["straightforward"]["mflop_per_token"] > small["textbook_mflop_per_token"]["total"]


@pytest.mark.slow
def test_quick_benchmark_on_real_text(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("\n".join(" ".join(s) for s in SENTENCES) * 3, encoding="utf8")
    output = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", "--text", str(text), "--sentences", "6", "--output", str(output)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(output.read_text())
    assert report["corpus"]["source"] == str(text)
    assert report["corpus"]["longest_token_bytes"] == len("https://www.bbc.co.uk/news/uk-politics-12345678")
    assert report["models"]["small"]["exactness"]["max_abs_diff"] <= 1e-5


def test_benchmark_without_its_text_says_how_to_make_it(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--text", str(tmp_path / "absent.txt"), "--output", str(tmp_path / "b.json")],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "python -m experiments.data.corpus" in result.stderr


def test_the_flop_counter_imports_no_benchmark_and_its_counts_print_from_bench_bilm():
    import ast

    tree = ast.parse((BENCHMARKS / "flops.py").read_text(encoding="utf8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name and name.split(".")[0].startswith("bench")}, imported
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "--flops-only",
            "--synthetic",
            "--sentences",
            "40",
            "--models",
            "small",
            "--batch-sizes",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "small batch 8: textbook" in result.stdout and "MFLOP/token, performed" in result.stdout


PRETRAIN_BENCHMARK = BENCHMARKS / "bench_pretrain.py"


def run_pretraining_benchmark(tmp_path, *options):
    """bench_pretrain.py on 60 short lines, bilm_demo, 3 steps (1 of warm-up), 1 thread, fp32, no
    reference, with `options`: (its output, the JSON report)."""
    text = tmp_path / "text.txt"
    text.write_text("\n".join(f"The cat number {i} sat on the mat , and the dog ran {i} times ." for i in range(60)))
    output = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            str(PRETRAIN_BENCHMARK),
            "--text",
            str(text),
            "--configs",
            "bilm_demo",
            "--steps",
            "3",
            "--warmup",
            "1",
            "--threads",
            "1",
            "--precisions",
            "fp32",
            "--reference",
            "none",
            "--output",
            str(output),
            *options,
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result, json.loads(output.read_text())


@pytest.mark.slow
def test_pretraining_benchmark_runs_and_reports_each_setting(tmp_path):
    result, report = run_pretraining_benchmark(tmp_path)
    (row,) = report["rows"]
    assert row["code_name"] == "current" and row["precision"] == "fp32" and row["steps_timed"] == 2
    assert row["tokens_per_s"] > 0 and 0 < row["performed_fraction_of_ceiling"] < 1.5
    assert "tokens/s" in result.stdout and report["cpu"]


@pytest.mark.slow
def test_pretraining_benchmark_compares_the_lstm_paths_of_an_unclipped_biLM(tmp_path):
    result, report = run_pretraining_benchmark(
        tmp_path, "--lstm-paths", "own", "torch", "--set", "model.cell_clip=0", "--set", "model.proj_clip=0"
    )
    own, torch_lstm = report["rows"]
    assert (own["lstm_path"], torch_lstm["lstm_path"]) == ("own", "torch")
    for row in (own, torch_lstm):
        assert row["settings"] == {"model.cell_clip": 0, "model.proj_clip": 0} and row["tokens_per_s"] > 0
    assert own["torch_lstm_layers"] == 0 and torch_lstm["torch_lstm_layers"] >= 3 * 2  # steps x layers
    assert own["vs_reference"] == 1.0
    assert torch_lstm["vs_reference"] == torch_lstm["tokens_per_s"] / own["tokens_per_s"]
    assert "torch LSTMs" in result.stdout


def test_the_reference_revision_is_extracted_or_refused_with_a_message(tmp_path):
    sys.path.insert(0, str(BENCHMARKS))
    import bench_pretrain

    if subprocess.run(["git", "-C", str(BENCHMARKS), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git clone")
    folder = bench_pretrain.extract_reference("HEAD", tmp_path / "reference")
    assert (folder / "spacy_elmo" / "bilm" / "model.py").exists()
    with pytest.raises(SystemExit, match="Could not extract the reference revision 'no-such-revision'"):
        bench_pretrain.extract_reference("no-such-revision", tmp_path / "other")


@pytest.mark.slow
def test_the_step_profile_reports_every_part_and_the_memory_kept(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("\n".join(f"The cat number {i} sat on the mat , and the dog ran {i} times ." for i in range(60)))
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "profile_pretrain.py"),
            "--text",
            str(text),
            "--config",
            "bilm_demo",
            "--steps",
            "3",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    for part in ("encoder", "lstm", "softmax"):
        assert f"{part} forward" in result.stdout and f"{part} backward" in result.stdout
    assert "kept for the backward pass" in result.stdout and "backward.py" in result.stdout
