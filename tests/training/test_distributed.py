"""Two processes under torchrun on the CPU (gloo): DistributedDataParallel."""
import json
import subprocess
import sys

import pytest
import torch
from confection import Config

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.training.run.checkpoint import load_checkpoint

from .conftest import tiny_settings


def torchrun(*args, cwd):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               "-m", "spacy_elmo", "pretrain", *map(str, args), "--no-progress"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_two_processes_train_resume_and_export(tmp_path, corpus, dev_corpus):
    config_path = tmp_path / "tiny.cfg"
    settings = tiny_settings(corpus, dev_corpus, training={"max_steps": 12, "eval_every": 6, "checkpoint_every": 6})
    Config(settings).to_disk(config_path)
    run = tmp_path / "run"
    done = torchrun(config_path, run, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    train = [r for r in map(json.loads, (run / "log.jsonl").read_text().splitlines()) if r["kind"] == "train"]
    assert [r["step"] for r in train] == list(range(2, 13, 2))  # one writer
    assert train[-1]["loss"] < train[0]["loss"]
    checkpoint = load_checkpoint(run / "checkpoint.pt")
    assert len(checkpoint["rng"]) == 2 and checkpoint["state"].world_size == 2
    # Each step trains on one batch per process: about twice a single process's tokens.
    assert checkpoint["state"].tokens > 12 * 150

    done = torchrun(config_path, run, "--resume", "--training.max_steps", "16", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert load_checkpoint(run / "checkpoint.pt")["state"].step == 16
    model = BiLM.from_allennlp(run / "model").eval()
    with torch.no_grad():
        out = model(batch_to_ids([["the", "cat", "sat"]]))
    assert out.layers.shape == (3, 1, 3, 32) and torch.isfinite(out.layers).all()
