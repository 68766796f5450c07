import json
import re
import shutil

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.errors import ElmoError
from spacy_elmo.training import pretrain
from spacy_elmo.training.data.lm_batches import collate
from spacy_elmo.training.run.checkpoint import load_checkpoint

from .conftest import Stop, stop_at, write_corpus


def records(run_dir, kind):
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def test_loss_falls_and_the_export_is_the_trained_model(tmp_path, tiny_config):
    run = tmp_path / "run"
    # Without dropout, so that the training loss measures what the model has learned.
    result = pretrain(tiny_config(training={"max_steps": 30, "eval_every": 10, "dropout": 0.0}), run, progress=False)
    train = records(run, "train")
    assert train[-1]["loss"] < train[0]["loss"] - 0.5
    dev = records(run, "dev")
    assert [r["step"] for r in dev] == [10, 20, 30]
    assert dev[-1]["ppl"] < dev[0]["ppl"]
    assert result.dev.forward == pytest.approx(dev[-1]["ppl_forward"])
    for name in ("options.json", "weights.hdf5", "vocab.txt", "softmax.hdf5", "pretrain.json"):
        assert (run / "model" / name).exists()
    assert json.loads((run / "model" / "pretrain.json").read_text())["weights_dtype"] == "float32"
    assert (run / "curves.png").stat().st_size > 0

    trained = result.model.bilm.eval()
    exported = BiLM.from_allennlp(run / "model").eval()
    sentences = [["the", "cat", "sat", "."], ["a", "zebra"], ["the"]]
    with torch.no_grad():
        expected, found = trained(batch_to_ids(sentences)), exported(batch_to_ids(sentences))
    torch.testing.assert_close(found.layers, expected.layers, rtol=0, atol=1e-6)

    # The LMs' top layer is the representation the biLM gives each word: the
    # forward LM after reading "<S> … w_k", the backward one after "</S> … w_k".
    lm = result.model.eval()
    words = ["the", "cat", "sat", "on", "a", "mat"]
    ids = numpy.arange(len(words))
    batch = collate([ids], words, numpy.zeros(len(words), dtype=int), bos_id=0, eos_id=1, max_chars=50)
    with torch.no_grad():
        top = lm.top_layer(batch)  # (2, n + 1, p): a single row, so its positions in order
        layer = trained(batch_to_ids([words])).layers[-1, 0]  # (n, 2p)
    p = top.shape[2]
    torch.testing.assert_close(top[0, 1:], layer[:, :p], rtol=0, atol=1e-5)
    torch.testing.assert_close(top[1, 1:].flip(0), layer[:, p:], rtol=0, atol=1e-5)


PLATEAU = "spacy-elmo.plateau.v1"


@pytest.mark.parametrize("schedule", [
    {},
    {"@pretrain_schedules": "spacy-elmo.cosine.v1", "warmup_steps": 3, "final_factor": 0.1, "max_steps": 12},
    # Every dev evaluation after the first (step 3) counts as no improvement: the rate halves at 6 and 9.
    {"@pretrain_schedules": PLATEAU, "warmup_steps": 5, "decay": 0.5, "min_improvement": 1e6},
])
def test_resume_continues_exactly(tmp_path, tiny_config, schedule):
    eval_every = 3 if schedule.get("@pretrain_schedules") == PLATEAU else 6
    config = tiny_config(training={"max_steps": 12, "checkpoint_every": 4, "eval_every": eval_every,
                                   "schedule": schedule})
    pretrain(config, tmp_path / "whole", progress=False)
    with pytest.raises(Stop):  # a kill after step 6: the last checkpoint is step 4's
        pretrain(config, tmp_path / "cut", progress=False, on_step=stop_at(6))
    assert load_checkpoint(tmp_path / "cut" / "checkpoint.pt")["state"].step == 4
    pretrain(config, tmp_path / "cut", resume=True, progress=False)
    whole = load_checkpoint(tmp_path / "whole" / "checkpoint.pt")
    cut = load_checkpoint(tmp_path / "cut" / "checkpoint.pt")
    assert cut["state"].step == whole["state"].step == 12
    assert cut["state"].tokens == whole["state"].tokens
    for name, value in whole["model"].items():
        torch.testing.assert_close(cut["model"][name], value, rtol=0, atol=1e-6, msg=name)
    def logged(run):
        return [(r["kind"], r["step"], r.get("lr")) for r in map(json.loads, (run / "log.jsonl").read_text().splitlines())]

    assert logged(tmp_path / "cut") == logged(tmp_path / "whole")
    if schedule.get("@pretrain_schedules") == PLATEAU:
        assert [lr for kind, _, lr in logged(tmp_path / "whole") if kind == "train"][-1] == pytest.approx(0.01 / 4)


def test_resuming_a_finished_run_exports_the_same_model_card(tmp_path, tiny_config):
    """Nothing left to train: the export keeps the last training perplexity, so the model
    folder (and every fingerprint of it) stays as it was."""
    config = tiny_config(training={"max_steps": 8, "checkpoint_every": 4, "log_every": 2})
    pretrain(config, tmp_path / "run", progress=False)
    first = json.loads((tmp_path / "run" / "model" / "pretrain.json").read_text())
    pretrain(config, tmp_path / "run", resume=True, progress=False)
    again = json.loads((tmp_path / "run" / "model" / "pretrain.json").read_text())
    assert first["train_perplexity"] is not None
    assert again == first


def test_a_run_stopped_in_its_export_logs_its_last_dev_evaluation_once(tmp_path, tiny_config):
    # Resumed, it evaluated the dev set at the last step again: a second dev point in the log and the plot.
    config = tiny_config(training={"max_steps": 8, "checkpoint_every": 4, "eval_every": 4})
    run = tmp_path / "run"
    pretrain(config, run, progress=False)
    card = json.loads((run / "model" / "pretrain.json").read_text())
    shutil.rmtree(run / "model")  # as a kill halfway through the export leaves it
    pretrain(config, run, resume=True, progress=False)
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "dev"] == [4, 8]
    assert json.loads((run / "model" / "pretrain.json").read_text()) == card


def test_the_backward_pass_multiplies_as_the_precision_says(tmp_path, tiny_config, monkeypatch):
    """The backward pass runs outside autocast, so under the precision's TF32 switches of its own
    (on a GPU, cuDNN would otherwise run an "fp32" run's backward pass in TF32)."""
    from contextlib import contextmanager

    from spacy_elmo.training.run import trainer

    inside, backward_inside = [], []

    @contextmanager
    def recording_switches(device, name):
        inside.append(name)
        try:
            yield
        finally:
            inside.pop()

    backward = torch.autograd.backward

    def recorded_backward(*args, **kwargs):
        backward_inside.append(list(inside))
        return backward(*args, **kwargs)

    monkeypatch.setattr(trainer, "tf32_switches", recording_switches)
    monkeypatch.setattr(torch.autograd, "backward", recorded_backward)
    pretrain(tiny_config(training={"max_steps": 3, "precision": "tf32"}), tmp_path / "run", progress=False)
    assert backward_inside == [["tf32"]] * 3


def test_a_nan_loss_stops_the_run_and_keeps_the_last_checkpoint(tmp_path, tiny_config):
    def poison(state, lm):
        if state.step == 6:
            with torch.no_grad():
                lm.softmax.linear.weight[0, 0] = float("nan")

    run = tmp_path / "run"
    with pytest.raises(ElmoError) as err:
        pretrain(tiny_config(training={"checkpoint_every": 4}), run, progress=False, on_step=poison)
    assert err.value.code == "E312" and "step 7" in str(err.value) and "step 4" in str(err.value)
    kept = load_checkpoint(run / "checkpoint.pt")
    assert kept["state"].step == 4
    assert all(torch.isfinite(v).all() for v in kept["model"].values())
    assert records(run, "stopped")[0]["step"] == 7
    # Resuming goes back to step 4 and, without the poison, finishes.
    result = pretrain(tiny_config(training={"checkpoint_every": 4}), run, resume=True, progress=False)
    assert result.state.step == 12


def test_an_output_dir_holding_something_else_is_never_overwritten(tmp_path, tiny_config):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ElmoError, match="E306"):
        pretrain(tiny_config(), other, progress=False)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]

    run = tmp_path / "run"
    pretrain(tiny_config(training={"max_steps": 2}), run, progress=False)
    weights = (run / "model" / "weights.hdf5").read_bytes()
    with pytest.raises(ElmoError, match="E307"):
        pretrain(tiny_config(training={"max_steps": 2}), run, progress=False)
    with pytest.raises(ElmoError, match="E308.*model.lstm_dim"):
        pretrain(tiny_config(training={"max_steps": 4}, model={"lstm_dim": 24}), run, resume=True, progress=False)
    assert (run / "model" / "weights.hdf5").read_bytes() == weights
    # [training] settings may change on resume: here, to train longer.
    result = pretrain(tiny_config(training={"max_steps": 4}), run, resume=True, progress=False)
    assert result.state.step == 4


@pytest.mark.parametrize("change,named", [
    ({"optimizer": {"@pretrain_optimizers": "spacy-elmo.SGD.v1"}}, "training.optimizer.@pretrain_optimizers"),
    ({"tokens_per_batch": 800}, "training.tokens_per_batch"),
])
def test_settings_the_checkpoint_is_made_for_cannot_change_on_resume(tmp_path, tiny_config, change, named):
    # Adam's state fed to SGD failed at the first step (a bare KeyError); with another batch size
    # the saved position in the epoch counted other batches, and part of the epoch was skipped.
    run = tmp_path / "run"
    with pytest.raises(Stop):
        pretrain(tiny_config(training={"max_steps": 8, "checkpoint_every": 2}), run, progress=False,
                 on_step=stop_at(3))
    config = (run / "config.cfg").read_text(encoding="utf8")
    with pytest.raises(ElmoError, match=rf"E308.*{re.escape(named)}"):
        pretrain(tiny_config(training={"max_steps": 8, "checkpoint_every": 2, **change}), run, resume=True,
                 progress=False)
    assert (run / "config.cfg").read_text(encoding="utf8") == config


def test_optimiser_settings_changed_on_resume_are_the_ones_used(tmp_path, tiny_config):
    # torch's Optimizer.load_state_dict restores the saved settings: the run warned of the
    # change and recorded it, then went on with the old ones.
    run = tmp_path / "run"
    with pytest.raises(Stop):
        pretrain(tiny_config(training={"max_steps": 6, "checkpoint_every": 2}), run, progress=False,
                 on_step=stop_at(3))
    changed = {"learn_rate": 0.01, "weight_decay": 0.5, "beta1": 0.0, "eps": 0.1}
    pretrain(tiny_config(training={"max_steps": 6, "checkpoint_every": 2, "optimizer": changed}), run,
             resume=True, progress=False)
    (group,) = load_checkpoint(run / "checkpoint.pt")["optimizer"]["param_groups"]
    assert (group["weight_decay"], group["betas"][0], group["eps"]) == (0.5, 0.0, 0.1)


def test_a_corpus_smaller_than_one_batch_trains(tmp_path, tiny_config):
    small = tmp_path / "small.txt"
    small.write_text("the cat sat .\na dog ran\n")
    result = pretrain(tiny_config(paths={"train": str(small), "dev": str(small)}, training={"max_steps": 3}),
                      tmp_path / "run", progress=False)
    assert result.state.step == 3 and result.state.epoch == 3
    assert numpy.isfinite(result.dev.mean)


def test_a_corpus_without_text_is_a_clear_error(tmp_path, tiny_config):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"\n   \n\xff\xfe\n")  # (a file with NUL bytes is binary: E319, test_run_faults.py)
    with pytest.raises(ElmoError, match="E311"):
        pretrain(tiny_config(paths={"train": str(empty), "dev": None}), tmp_path / "run", progress=False)


def test_init_from_continues_from_existing_weights(tmp_path, tiny_config, corpus):
    first = pretrain(tiny_config(training={"max_steps": 10}), tmp_path / "first", progress=False)
    frozen = {"training": {"max_steps": 1, "optimizer": {"learn_rate": 1e-12}, "dropout": 0.0}}
    # Same vocabulary: the softmax carries over too, so nothing moves.
    same = pretrain(tiny_config(**frozen), tmp_path / "same", init_from=tmp_path / "first" / "model", progress=False)
    for name, value in first.model.state_dict().items():
        torch.testing.assert_close(same.model.state_dict()[name], value, rtol=0, atol=1e-6, msg=name)
    # Another architecture in the config is replaced by the init model's.
    domain = write_corpus(tmp_path / "domain.txt", 50, seed=3)
    other = pretrain(
        tiny_config(paths={"train": str(domain)}, vocab={"size": 10}, model={"lstm_dim": 24}, **frozen),
        tmp_path / "other", init_from=tmp_path / "first" / "model", progress=False,
    )
    assert other.model.bilm.options == first.model.bilm.options
    torch.testing.assert_close(other.model.bilm.lstm.W_proj[0], first.model.bilm.lstm.W_proj[0], rtol=0, atol=1e-6)
    assert other.model.softmax.n_classes == 10  # a new vocabulary, a fresh softmax


def test_init_from_a_published_allennlp_model(tmp_path, tiny_config, fixture_paths):
    import shutil

    import h5py

    options, weights = fixture_paths
    published = tmp_path / "published"
    published.mkdir()
    shutil.copy(options, published / "options.json")
    shutil.copy(weights, published / "weights.hdf5")
    frozen = {"training": {"max_steps": 2, "optimizer": {"learn_rate": 1e-12}}}
    result = pretrain(tiny_config(**frozen), tmp_path / "run", init_from=published, progress=False)
    assert result.model.bilm.options.n_highway == 2  # the published architecture, not the config's
    with h5py.File(weights, "r") as before, h5py.File(tmp_path / "run" / "model" / "weights.hdf5", "r") as after:
        names = []
        before.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        exported = [n for n in names if n in after]
        assert len(exported) > 10
        for name in exported:
            numpy.testing.assert_allclose(after[name][...], before[name][...], atol=1e-6, err_msg=name)


def test_the_elmo_component_loads_the_export(tmp_path, tiny_config):
    import spacy
    from spacy.training import Example

    result = pretrain(tiny_config(training={"max_steps": 2}), tmp_path / "run", progress=False)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    elmo = nlp.add_pipe("elmo")
    elmo.initialize(lambda: [Example.from_dict(nlp.make_doc("the cat"), {})], nlp=nlp,
                    options_file=str(tmp_path / "run" / "model"))
    doc = nlp("the cat sat on the mat .")
    with torch.no_grad():
        expected = result.model.bilm.eval()(batch_to_ids([[t.text for t in doc]])).layers[:, 0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected.numpy(), atol=1e-5)
