"""Tiny corpora and configs: every pretraining test runs in a second or two."""
import random
from pathlib import Path

import pytest
import torch

from spacy_elmo.training import PretrainConfig
from spacy_elmo.training.data.tokenizers import WHITESPACE

WORDS = (
    "the a cat dog sat on mat and ran to house big small red blue saw ate fish bird "
    "tree under over quickly slowly happy sad old new"
).split()


def write_corpus(path: Path, n_lines: int, seed: int = 0) -> Path:
    """Lines of 3-12 words from a small vocabulary with some structure."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        n = rng.randint(3, 12)
        words = ["the"] + [rng.choice(WORDS) for _ in range(n - 2)] + ["."]
        lines.append(" ".join(words))
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return path


def tiny_settings(train, dev=None, **sections) -> dict:
    """A complete config as sections of settings; `sections` replace or extend them."""
    settings = {
        "paths": {"train": str(train), "dev": str(dev) if dev else None},
        "system": {"seed": 0, "threads": 1},
        "corpus": {"tokenizer": WHITESPACE, "max_length": 20},
        "vocab": {"size": 100},
        "model": {
            "char_embedding_dim": 4,
            "filters": [[1, 8], [2, 8], [3, 16]],
            "n_highway": 1,
            "lstm_dim": 32,
            "projection_dim": 16,
            "n_layers": 2,
        },
        "softmax": {"@pretrain_softmaxes": "spacy-elmo.FullSoftmax.v1"},
        "training": {
            "tokens_per_batch": 200,
            "max_steps": 12,
            "dropout": 0.1,
            "eval_every": 6,
            "checkpoint_every": 4,
            "log_every": 2,
            "optimizer": {"learn_rate": 0.01},
        },
    }
    for section, values in sections.items():
        settings.setdefault(section, {}).update(values)
    return settings


class Stop(Exception):
    """Raised by `stop_at`'s hook: a run killed at a step."""


def stop_at(step):
    """An `on_step` hook that stops the run after `step`."""

    def hook(state, lm):
        if state.step == step:
            raise Stop()

    return hook


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models run fastest on one thread (and far faster than on two
    busy cores); the configs here ask for one too. Put it back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "train.txt", 200)


@pytest.fixture
def dev_corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "dev.txt", 20, seed=1)


@pytest.fixture
def tiny_config(corpus, dev_corpus):
    def make(**sections) -> PretrainConfig:
        return PretrainConfig.from_dict(tiny_settings(corpus, dev_corpus, **sections))

    return make
