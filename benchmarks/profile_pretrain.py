"""Where a pretraining step's time and memory go, part by part, on real text.

    python benchmarks/profile_pretrain.py --text corpus/v2/pretrain/train.txt --max-lines 20000 \
        --init elmo-en-small --steps 6 --threads 1

The config's model (``--config``, bilm_release by default; ``--init`` loads trained weights and
their softmax, so that the gates and the softmax behave as in a real run) trains on the first
--max-lines lines of the text, tokenised before anything is timed, in the batches the trainer
builds. Each step is cut at the parts' boundaries (the gradient of each part's output is
computed, then handed to the part below), and the report gives, averaged over the steps after
the first two:

- seconds per step of the forward and backward pass of the token encoder (character CNN,
  highway, projection over the batch's distinct words), the LSTMs and the softmax, and of the
  optimiser step (gradient clipping and Adam);
- what the forward pass keeps for the backward pass (``saved_tensors_hooks``: each storage
  counted once, by the source line that made it), and the process's peak resident memory;
- with --torch-profile, torch.profiler's table of the most expensive operators.

``--stepwise`` runs the LSTMs as autograd through their steps (the reference the hand-written
backward pass replaced); ``--precision bf16`` under bf16 autocast.
"""

import argparse
import collections
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import cpu_name, peak_rss_mb  # noqa: E402
from bench_pretrain import CONFIGS, prepare  # noqa: E402

PARTS = ("encoder", "lstm", "softmax")


def build(args, prepared: Path):
    from spacy_elmo.bilm import BiLM
    from spacy_elmo.published_models import model_folder
    from spacy_elmo.training import PretrainingLM, SoftmaxHead
    from spacy_elmo.training.data.lm_batches import CorpusBatches
    from spacy_elmo.training.data.prepared import PreparedCorpus
    from spacy_elmo.training.data.vocab import LMVocab
    from spacy_elmo.training.run.config import load_config, resolve

    config = load_config(CONFIGS / f"{args.config}.cfg", {"paths.train": str(args.text)})
    corpus = PreparedCorpus.load(prepared / "train")
    if args.init:
        init = model_folder(args.init)
        vocab = LMVocab.from_file(init / "vocab.txt")
        bilm, softmax = BiLM.from_allennlp(init), SoftmaxHead.load(init / "softmax.hdf5")
    else:
        vocab = LMVocab.from_counts(corpus.words, corpus.counts, config.vocab.size, config.vocab.min_count)
        bilm = BiLM(config.model.options)
        softmax = resolve(config.softmax)(config.model.projection_dim, len(vocab))
    lm = PretrainingLM(bilm, softmax, config.training.dropout)
    lm.bilm.lstm.use_paths(replace(lm.bilm.lstm.paths, hand_written_backward=not args.stepwise))
    batches = CorpusBatches(
        corpus,
        vocab,
        config.corpus.max_length,
        config.training.tokens_per_batch,
        config.model.options.max_characters_per_token,
    )
    plan, epoch = [], 0
    while len(plan) < args.steps:  # as many epochs as the steps need
        plan += batches.epoch(0, epoch)
        epoch += 1
    plan = plan[: args.steps]
    return lm, [batches.batch(indices) for indices in plan], config.training.grad_clip


def timed_step(lm, batch, optimizer, grad_clip: float, precision: str, seconds: collections.Counter) -> None:
    """One training step, its parts timed one after another."""
    from spacy_elmo.bilm.precision import precision as in_precision

    def clock(name, start):
        seconds[name] += time.perf_counter() - start
        return time.perf_counter()

    start = time.perf_counter()
    with in_precision("cpu", precision):
        vectors = lm.bilm.encode_tokens(batch.char_ids)
        start = clock("encoder forward", start)
        token_leaf = vectors.detach().requires_grad_(True)
        inputs = lm.dropout(F.embedding(batch.index, token_leaf))
        outputs, _ = lm.bilm.lstm(inputs, batch.batch_sizes, dropout=lm.dropout.p)
        top = lm.dropout(outputs[-1])
        start = clock("lstm forward", start)
        top_leaf = top.detach().requires_grad_(True)
        log_probs = lm.softmax.target_log_prob(top_leaf.reshape(-1, top_leaf.shape[2]), batch.targets.reshape(-1))
        loss = -log_probs.float().mean()
        start = clock("softmax forward", start)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    start = clock("softmax backward", start)
    top.backward(top_leaf.grad)
    start = clock("lstm backward", start)
    vectors.backward(token_leaf.grad)
    start = clock("encoder backward", start)
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(lm.parameters(), grad_clip)
    optimizer.step()
    clock("optimiser", start)


def saved_memory(lm, batch, precision: str):
    """What one forward pass keeps for the backward pass: {source line: bytes}, each storage once."""
    from spacy_elmo.bilm.precision import precision as in_precision

    seen, by_line = set(), collections.Counter()

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            frames = [
                f for f in traceback.extract_stack()[:-1] if "spacy_elmo" in f.filename or "torch/nn" in f.filename
            ]
            where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "elsewhere"
            by_line[where] += storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), in_precision("cpu", precision):
        log_probs = lm(batch)
    del log_probs
    return by_line


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", required=True, type=Path)
    parser.add_argument("--max-lines", type=int, default=20000)
    parser.add_argument("--config", default="bilm_release")
    parser.add_argument("--init", help="a trained biLM with vocab.txt and softmax.hdf5: a folder, or a model's name")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--stepwise", action="store_true", help="the LSTMs under autograd through their steps")
    parser.add_argument("--torch-profile", action="store_true", help="also torch.profiler's operator table")
    args = parser.parse_args(argv)
    if args.steps < 3:
        sys.exit("--steps must be at least 3: the first two are not counted")
    torch.set_num_threads(args.threads)
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} python benchmarks/profile_pretrain.py {' '.join(sys.argv[1:])}")
    print(f"CPU: {cpu_name()}, {args.threads} thread(s), torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        train = Path(tmp) / "train.txt"
        with open(args.text, encoding="utf8") as f:
            train.write_text("".join(line for _, line in zip(range(args.max_lines), f)), encoding="utf8")
        prepare(train, args.config, Path(tmp) / "prepared")
        lm, batches, grad_clip = build(args, Path(tmp) / "prepared")
    optimizer = torch.optim.Adam(lm.parameters(), lr=1e-5)
    seconds: collections.Counter = collections.Counter()
    for i, batch in enumerate(batches):
        if i == 2:
            seconds.clear()
        timed_step(lm, batch, optimizer, grad_clip, args.precision, seconds)
    counted = batches[2:]
    targets = sum(b.n_targets for b in counted) / len(counted)
    total = sum(seconds.values()) / len(counted)
    print(
        f"{len(counted)} steps of {targets:,.0f} targets on average: {total:.3f} s a step, "
        f"{targets / total:,.0f} tokens/s"
    )
    for name, value in seconds.items():
        print(f"  {name:<17} {value / len(counted):6.3f} s  {value / sum(seconds.values()):6.1%}")
    by_line = saved_memory(lm, batches[-1], args.precision)
    print(
        f"kept for the backward pass: {sum(by_line.values()) / 2**20:,.0f} MiB "
        f"({batches[-1].n_targets:,} targets, {batches[-1].char_ids.shape[0]:,} distinct words)"
    )
    for where, size in by_line.most_common(8):
        print(f"  {where:<28} {size / 2**20:8,.0f} MiB")
    print(f"peak resident memory of this process: {peak_rss_mb():,.0f} MB")
    if args.torch_profile:
        from torch.profiler import profile

        with profile(record_shapes=True) as prof:
            timed_step(lm, batches[-1], optimizer, grad_clip, args.precision, collections.Counter())
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()
