"""`pretrain` trains exactly what a plain PyTorch loop over the same data trains.

The reference below is written out from torch's own pieces: it reads and
tokenises the text, counts the vocabulary, cuts and plans the batches and runs
the optimiser and the learning-rate schedulers by hand, with none of the
config's machinery (no registry, no settings objects). After a few steps the
weights of both must be the same to the last bit, for each optimiser,
schedule, softmax and tokenizer a config can name.
"""
from pathlib import Path
from typing import Dict, List

import numpy
import pytest
import torch
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, ReduceLROnPlateau, SequentialLR

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.training import LMVocab, PretrainConfig, PretrainingLM, SoftmaxHead, pretrain
from spacy_elmo.training.data.lm_batches import collate
from spacy_elmo.training.data.tokenizers import WHITESPACE
from spacy_elmo.training.objective.scoring import Perplexity, nll_sums

from .conftest import tiny_settings, write_corpus

STEPS = 6
MAX_LENGTH = 8  # short enough that some sentences are cut into pieces
# The head each registered softmax builds.
SOFTMAX_KINDS = {"spacy-elmo.FullSoftmax.v1": "full", "spacy-elmo.AdaptiveSoftmax.v1": "adaptive"}


def sentences_of(path: Path, tokenizer: str) -> List[List[str]]:
    lines = [line.strip() for line in path.read_text(encoding="utf8").splitlines() if line.strip()]
    if tokenizer == WHITESPACE:
        return [line.split() for line in lines]
    import spacy

    nlp = spacy.blank(tokenizer.split(":")[1])
    nlp.add_pipe("sentencizer")
    return [[t.text for t in sent] for doc in nlp.pipe(lines) for sent in doc.sents if len(sent)]


class Corpus:
    """Words numbered in order of first appearance, sentences cut into pieces."""

    def __init__(self, sentences: List[List[str]], max_length: int):
        index: Dict[str, int] = {}
        self.counts: List[int] = []
        self.pieces: List[numpy.ndarray] = []
        for sentence in sentences:
            ids = []
            for word in sentence:
                if word not in index:
                    index[word] = len(index)
                    self.counts.append(0)
                self.counts[index[word]] += 1
                ids.append(index[word])
            for start in range(0, len(ids), max_length):
                self.pieces.append(numpy.asarray(ids[start : start + max_length], dtype=numpy.int64))
        self.words = list(index)
        self.lengths = numpy.asarray([len(p) for p in self.pieces], dtype=numpy.int64)


def cut(order, lengths, budget) -> List[numpy.ndarray]:
    """Rows sorted longest first, as many per batch as rows x (longest + 1) allows."""
    batches, begin = [], 0
    while begin < len(order):
        rows = max(1, budget // int(lengths[order[begin]] + 1))
        batches.append(order[begin : begin + rows])
        begin += rows
    return batches


def epoch_plan(lengths, budget, seed, epoch) -> List[numpy.ndarray]:
    """Shuffle, sort by length within pools of about 100 batches, cut, shuffle the batches."""
    rng = numpy.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    pool = max(1, int(max(1.0, budget / (float(lengths.mean()) + 1.0)) * 100))
    batches = []
    for begin in range(0, len(order), pool):
        chunk = order[begin : begin + pool]
        batches.extend(cut(chunk[numpy.argsort(-lengths[chunk], kind="stable")], lengths, budget))
    return [batches[i] for i in rng.permutation(len(batches))]


def reference(settings: dict) -> Dict[str, torch.Tensor]:
    seed, model, training = settings["system"]["seed"], settings["model"], settings["training"]
    opt, sched, soft = training["optimizer"], training["schedule"], settings["softmax"]
    budget, tokenizer = training["tokens_per_batch"], settings["corpus"]["tokenizer"]
    train = Corpus(sentences_of(Path(settings["paths"]["train"]), tokenizer), MAX_LENGTH)
    dev = Corpus(sentences_of(Path(settings["paths"]["dev"]), tokenizer), MAX_LENGTH) if settings["paths"]["dev"] else None
    vocab = LMVocab.from_counts(train.words, numpy.asarray(train.counts), settings["vocab"]["size"], 1)
    options = BiLMOptions(**model)

    def batch(corpus: Corpus, rows):
        return collate([corpus.pieces[i] for i in rows], corpus.words, vocab.ids(corpus.words), vocab.bos_id,
                       vocab.eos_id, options.max_characters_per_token)

    torch.manual_seed(seed)
    lm = PretrainingLM(
        BiLM(options),
        SoftmaxHead(options.projection_dim, len(vocab), SOFTMAX_KINDS[soft["@pretrain_softmaxes"]],
                    soft.get("cutoffs", ()), soft.get("div_value", 4.0)),
        training["dropout"],
    )
    lr = opt["learn_rate"]
    if opt["@pretrain_optimizers"] == "spacy-elmo.Adam.v1":
        optimizer = torch.optim.Adam(lm.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    elif opt["@pretrain_optimizers"] == "spacy-elmo.SGD.v1":
        optimizer = torch.optim.SGD(lm.parameters(), lr=lr, momentum=opt["momentum"])
    else:
        optimizer = torch.optim.Adagrad(lm.parameters(), lr=lr, initial_accumulator_value=1.0)
    warmup, decay_steps = sched.get("warmup_steps", 0), training["max_steps"] - sched.get("warmup_steps", 0)
    phases = [LinearLR(optimizer, 1.0 / warmup, 1.0, total_iters=warmup - 1)] if warmup else []
    if sched["@pretrain_schedules"] == "spacy-elmo.linear.v1":
        phases.append(LinearLR(optimizer, 1.0, sched["final_factor"], total_iters=decay_steps))
    elif sched["@pretrain_schedules"] == "spacy-elmo.cosine.v1":
        phases.append(CosineAnnealingLR(optimizer, T_max=decay_steps, eta_min=sched["final_factor"] * lr))
    per_step = SequentialLR(optimizer, phases, milestones=[warmup]) if len(phases) == 2 else (phases or [None])[0]
    plateau = None
    if sched["@pretrain_schedules"] == "spacy-elmo.plateau.v1":
        plateau = ReduceLROnPlateau(optimizer, "min", factor=sched["decay"], patience=0,
                                    threshold=sched.get("min_improvement", 0.0), threshold_mode="abs", eps=0.0)

    torch.manual_seed(seed + 1)
    lm.train()
    step, epoch = 0, 0
    while step < STEPS:
        for rows in epoch_plan(train.lengths, budget, seed, epoch):
            if step == STEPS:
                break
            loss = -lm(batch(train, rows)).float().mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(lm.parameters(), training["grad_clip"])
            optimizer.step()
            if per_step is not None:
                per_step.step()
            step += 1
            if dev is not None and step % training["eval_every"] == 0:
                order = numpy.argsort(-dev.lengths, kind="stable")
                sums = nll_sums(lm, (batch(dev, rows) for rows in cut(order, dev.lengths, budget)), torch.device("cpu"))
                if plateau is not None:
                    plateau.step(Perplexity.from_sums(float(sums[0]), float(sums[1]), int(sums[2])).mean)
        epoch += 1
    return lm.state_dict()


CASES = {
    "adam, constant, full softmax": dict(),
    "sgd with momentum, warm-up then linear decay, adaptive softmax": dict(
        optimizer={"@pretrain_optimizers": "spacy-elmo.SGD.v1", "learn_rate": 0.5, "momentum": 0.9},
        schedule={"@pretrain_schedules": "spacy-elmo.linear.v1", "warmup_steps": 2, "final_factor": 0.1,
                  "max_steps": STEPS},
        softmax={"@pretrain_softmaxes": "spacy-elmo.AdaptiveSoftmax.v1", "cutoffs": [10, 30], "div_value": 2.0},
    ),
    "adagrad, warm-up then cosine": dict(
        optimizer={"@pretrain_optimizers": "spacy-elmo.Adagrad.v1", "learn_rate": 0.05},
        schedule={"@pretrain_schedules": "spacy-elmo.cosine.v1", "warmup_steps": 3, "final_factor": 0.2,
                  "max_steps": STEPS},
    ),
    "adam, plateau on dev perplexity, spaCy's tokenizer": dict(
        schedule={"@pretrain_schedules": "spacy-elmo.plateau.v1", "decay": 0.5, "min_improvement": 1000.0},
        tokenizer="blank:en", dev=True,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pretraining_trains_what_a_plain_torch_loop_trains(tmp_path, case):
    spec = dict(CASES[case])
    train = write_corpus(tmp_path / "train.txt", 80)
    dev = write_corpus(tmp_path / "dev.txt", 12, seed=1) if spec.pop("dev", False) else None
    settings = tiny_settings(train, dev)
    settings["corpus"].update(tokenizer=spec.pop("tokenizer", WHITESPACE), max_length=MAX_LENGTH)
    settings["softmax"] = spec.pop("softmax", {"@pretrain_softmaxes": "spacy-elmo.FullSoftmax.v1"})
    settings["training"].update(
        max_steps=STEPS, eval_every=2, checkpoint_every=100, grad_clip=1.0,
        optimizer=spec.pop("optimizer", {"@pretrain_optimizers": "spacy-elmo.Adam.v1", "learn_rate": 0.01}),
        schedule=spec.pop("schedule", {"@pretrain_schedules": "spacy-elmo.constant.v1"}),
    )
    assert not spec
    result = pretrain(PretrainConfig.from_dict(settings), tmp_path / "run", progress=False)
    assert result.state.step == STEPS
    found, expected = result.model.state_dict(), reference(settings)
    assert list(found) == list(expected)
    for name, value in expected.items():
        assert torch.equal(found[name], value), name
