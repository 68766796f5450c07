import json

import numpy
import pytest
import torch
from torch.nn import functional as F

from spacy_elmo.bilm import words_to_ids
from spacy_elmo.training import PretrainConfig, SoftmaxHead, load_model, perplexity, pretrain

from .conftest import write_corpus


def brute_force_nll(lm, vocab, sentences):
    """Forward and backward negative log-likelihood, one sentence at a time,
    scored against an explicit softmax over the whole vocabulary."""
    nll = [0.0, 0.0]
    W, b = lm.softmax.linear.weight, lm.softmax.linear.bias
    for words in sentences:
        sequences = [["<S>", *words], ["</S>", *words[::-1]]]
        targets = [[*words, "</S>"], [*words[::-1], "<S>"]]
        vectors = [lm.bilm.encode_tokens(torch.from_numpy(words_to_ids(s))) for s in sequences]
        # One row: every step runs the row's both directions.
        outputs, _ = lm.bilm.lstm(torch.stack(vectors), [1] * len(sequences[0]))
        for d in range(2):
            log_probs = torch.log_softmax(outputs[-1][d] @ W.T + b, dim=-1)
            ids = [vocab.index.get(w, vocab.unk_id) for w in targets[d]]
            nll[d] -= float(log_probs[torch.arange(len(ids)), ids].double().sum())
    return nll


def test_perplexity_is_exact_and_cli_writes_json(tmp_path, tiny_config):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    pretrain(tiny_config(), tmp_path / "run", progress=False)
    model_dir = tmp_path / "run" / "model"
    text = write_corpus(tmp_path / "eval.txt", 15, seed=7)
    with text.open("a", encoding="utf8") as f:
        f.write("the zebra sat on the xylophone\n")  # two words outside the vocabulary
    out = tmp_path / "ppl.json"
    result = CliRunner().invoke(app, ["perplexity", str(model_dir), str(text), "--output", str(out)])
    assert result.exit_code == 0, result.output
    reported = json.loads(out.read_text())
    assert set(reported) == {"forward", "backward", "mean", "tokens"}

    lm, vocab, _ = load_model(model_dir)
    sentences = [line.split() for line in text.read_text().splitlines()]
    with torch.no_grad():
        nll_f, nll_b = brute_force_nll(lm, vocab, sentences)
    n = sum(len(s) + 1 for s in sentences)
    assert reported["tokens"] == n
    assert reported["forward"] == pytest.approx(numpy.exp(nll_f / n), rel=1e-5)
    assert reported["backward"] == pytest.approx(numpy.exp(nll_b / n), rel=1e-5)
    assert reported["mean"] == pytest.approx(numpy.exp((nll_f + nll_b) / (2 * n)), rel=1e-5)
    report = perplexity(model_dir, text)
    assert report.oov == 2  # predictions of words outside the vocabulary, per direction
    assert report.perplexity.forward == pytest.approx(reported["forward"], rel=1e-9)
    graphs = tmp_path / "graphs.json"  # on a CPU the CUDA graphs change nothing
    result = CliRunner().invoke(app, ["perplexity", str(model_dir), str(text), "--output", str(graphs), "--cuda-graphs"])
    assert result.exit_code == 0, result.output
    assert json.loads(graphs.read_text()) == reported


def test_adaptive_softmax_is_normalised_and_its_loss_exact():
    torch.manual_seed(0)
    head = SoftmaxHead(8, 50, "adaptive", cutoffs=[5, 20], div_value=2.0)
    hidden = torch.randn(30, 8)
    targets = torch.randint(0, 50, (30,))
    with torch.no_grad():
        full = head.log_prob(hidden)
        numpy.testing.assert_allclose(full.exp().sum(dim=1).numpy(), numpy.ones(30), atol=1e-5)
        numpy.testing.assert_allclose(
            head.target_log_prob(hidden, targets).numpy(), full[torch.arange(30), targets].numpy(), atol=1e-5
        )


def test_adaptive_softmax_without_usable_cutoffs_is_full():
    head = SoftmaxHead(8, 10, "adaptive", cutoffs=[4000])
    assert head.kind == "full"
    hidden, targets = torch.randn(4, 8), torch.tensor([0, 3, 9, 2])
    expected = -F.cross_entropy(head.linear(hidden), targets, reduction="none")
    numpy.testing.assert_allclose(head.target_log_prob(hidden, targets).detach(), expected.detach(), atol=1e-6)


def test_softmax_save_load_round_trip(tmp_path):
    head = SoftmaxHead(8, 50, "adaptive", cutoffs=[5, 20], div_value=2.0)
    head.save(tmp_path / "softmax.hdf5")
    loaded = SoftmaxHead.load(tmp_path / "softmax.hdf5")
    assert loaded.same_shape(head)
    hidden = torch.randn(6, 8)
    numpy.testing.assert_allclose(loaded.log_prob(hidden).detach(), head.log_prob(hidden).detach(), atol=0)


def test_softmax_stored_as_float16_loads_back_as_float32(tmp_path):
    head = SoftmaxHead(8, 50, "adaptive", cutoffs=[5, 20], div_value=2.0)
    head.save(tmp_path / "softmax.hdf5", dtype="float16")
    loaded = SoftmaxHead.load(tmp_path / "softmax.hdf5")
    for (name, p), (_, q) in zip(head.state_dict().items(), loaded.state_dict().items()):
        assert q.dtype == torch.float32 and torch.equal(q, p.half().float()), name


def test_perplexity_from_words_is_that_of_character_ids(tmp_path):
    """The word-level path `perplexity` takes (`BiLM.top_layer_indexed`) scores
    every prediction as the character-id batches of training's dev evaluation
    do: a word outside the vocabulary, a sentence cut at max_length and an empty
    line included; a dropped or misplaced boundary prediction changes both the
    counts and the values."""
    from spacy_elmo.training.data.lm_batches import CorpusBatches
    from spacy_elmo.training.data.prepared import PreparedCorpus
    from spacy_elmo.training.objective.scoring import Perplexity, nll_sums

    from .conftest import tiny_settings

    config = PretrainConfig.from_dict(
        tiny_settings(write_corpus(tmp_path / "train.txt", 50), corpus={"max_length": 6}, training={"max_steps": 4})
    )
    pretrain(config, tmp_path / "run", progress=False)
    model_dir = tmp_path / "run" / "model"
    text = write_corpus(tmp_path / "eval.txt", 12, seed=5)
    long = "the cat sat on the mat and the dog ran to the big red house slowly ."  # 16 words: 3 pieces
    with text.open("a", encoding="utf8") as f:
        f.write(f"the zebra sat\n\n{long}\n")
    report = perplexity(model_dir, text, tokens_per_batch=60)

    lm, vocab, info = load_model(model_dir)
    assert info["max_length"] == 6
    sentences = [line.split() for line in text.read_text(encoding="utf8").splitlines()]
    data = CorpusBatches(
        PreparedCorpus.from_sentences(sentences), vocab, 6, 60, lm.bilm.options.max_characters_per_token
    )
    plan = data.evaluation()
    sums = nll_sums(lm, (data.batch(b) for b in plan), torch.device("cpu"))
    expected = Perplexity.from_sums(float(sums[0]), float(sums[1]), int(sums[2]))
    n_predictions = sum(-(-len(s) // 6) + len(s) for s in sentences)  # each piece's words and one boundary
    assert report.perplexity.tokens == expected.tokens == n_predictions
    assert report.oov == 1
    for name in ("forward", "backward", "mean"):
        assert getattr(report.perplexity, name) == pytest.approx(getattr(expected, name), rel=1e-6), name
    # Prediction by prediction (each batch's in another order): the same values.
    lm.eval()
    with torch.no_grad():
        for b in plan:
            by_words, by_chars = lm.log_probs_of_words(data.word_batch(b)), lm(data.batch(b))
            assert by_words.shape == by_chars.shape
            numpy.testing.assert_allclose(
                by_words.sort(dim=1).values.numpy(), by_chars.sort(dim=1).values.numpy(), rtol=1e-5, atol=1e-6
            )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_perplexity_on_cuda_is_that_on_the_cpu(tmp_path, tiny_config):
    """The word path on a GPU (BiLM.top_layer_indexed, its index arrays copied without waiting)."""
    pretrain(tiny_config(), tmp_path / "run", progress=False)
    text = write_corpus(tmp_path / "eval.txt", 15, seed=7)
    cpu = perplexity(tmp_path / "run" / "model", text).perplexity
    cuda = perplexity(tmp_path / "run" / "model", text, device="cuda").perplexity
    graphs = perplexity(tmp_path / "run" / "model", text, device="cuda", cuda_graphs=True).perplexity
    for name in ("forward", "backward", "mean"):
        assert getattr(cuda, name) == pytest.approx(getattr(cpu, name), rel=1e-4), name
        assert getattr(graphs, name) == pytest.approx(getattr(cuda, name), rel=1e-4), name
