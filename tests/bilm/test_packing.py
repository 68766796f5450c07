"""The time-major packing contract (spacy_elmo/bilm/packing.py), which the
biLM and pretraining's batches share."""

import numpy
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.bilm.packing import SentencePacking, TimeMajor, reversed_steps
from spacy_elmo.training.data.lm_batches import collate
from spacy_elmo.training.data.vocab import LMVocab

from ..numeric import assert_close_to_scale


@pytest.mark.parametrize("lengths", [[3, 5, 1, 4], [7], [2, 6, 4, 1, 3, 5]])
def test_packing_is_torchs_packed_sequence(lengths):
    steps = max(lengths) + 2  # padding past the longest row too
    padded = torch.arange(len(lengths) * steps * 2, dtype=torch.float32).view(len(lengths), steps, 2)
    packing = TimeMajor.of_lengths(torch.tensor(lengths), steps)
    expected = pack_padded_sequence(padded, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    assert packing.batch_sizes == expected.batch_sizes.tolist()
    assert torch.equal(packing.pack(padded), expected.data)
    assert torch.equal(packing.order, expected.sorted_indices)


def test_packing_positions_ties_and_padding():
    lengths = torch.tensor([2, 4, 2, 0, 4])
    packing = TimeMajor.of_lengths(lengths, 5)
    assert packing.order.tolist() == [1, 4, 0, 2, 3]  # longest first, ties in their given order
    assert packing.batch_sizes == [4, 4, 2, 2]  # non-increasing; the empty row never runs
    assert packing.positions.tolist() == [
        [2, 6, -1, -1, -1],
        [0, 4, 8, 10, -1],
        [3, 7, -1, -1, -1],
        [-1, -1, -1, -1, -1],
        [1, 5, 9, 11, -1],
    ]
    assert reversed_steps(lengths, 5).tolist()[1] == [3, 2, 1, 0, 4]


def test_pretraining_batches_feed_the_lstms_as_the_biLM_does(fixture_paths):
    """The two users of the packing agree: the LSTMs over a pretraining batch
    give, at every position, the biLM's own vectors of the same sentences
    (the forward LM reads <S> w1 … wn, the backward </S> wn … w1: prefixes
    of what BiLM.forward reads, so the outputs are the same)."""
    model = BiLM.from_allennlp(*fixture_paths).eval()
    sentences = [["The", "cat", "sat", "."], ["Hello", "!"], ["a", "b", "c", "d", "e", "f"], ["Hello", "there"]]
    words = sorted({w for s in sentences for w in s})
    vocab = LMVocab(["<S>", "</S>", "<UNK>", *words])
    ids = [numpy.array([words.index(w) for w in s]) for s in sentences]
    batch = collate(ids, words, vocab.ids(words), vocab.bos_id, vocab.eos_id, model.options.max_characters_per_token)
    with torch.no_grad():
        inputs = torch.nn.functional.embedding(batch.index, model.encode_tokens(batch.char_ids))
        top = model.lstm(inputs, batch.batch_sizes)[0][-1]  # (2, n_packed, p)
        expected = model(batch_to_ids(sentences)).layers[-1]  # (batch, tokens, 2p)
    p = model.options.projection_dim
    packing = TimeMajor.of_lengths(torch.tensor([len(s) + 1 for s in sentences]), max(map(len, sentences)) + 1)
    assert packing.batch_sizes == batch.batch_sizes
    for row, sentence in enumerate(sentences):
        n = len(sentence)
        forward = top[0, packing.positions[row, 1 : n + 1]]  # after reading <S> w1 … wk: token k
        backward = top[1, packing.positions[row, 1 : n + 1]].flip(0)  # after </S> wn … wk
        assert_close_to_scale(forward, expected[row, :n, :p])
        assert_close_to_scale(backward, expected[row, :n, p:])


def test_sentence_packing_predictions_read_the_word_before():
    """Each prediction comes from the position its direction reads just before
    the predicted word: forwards <S> w1 … wn predict w1 … wn </S>, backwards
    w1 … wn </S> predict <S> w1 … wn; an empty sentence predicts one boundary."""
    index, lengths = numpy.array([2, 3, 4, 5, 6]), numpy.array([2, 0, 3])
    packing = SentencePacking.of(index, lengths, predictions=True)
    positions, predicted = packing.predictions
    numpy.testing.assert_array_equal(predicted[0], [2, 3, 1, 1, 4, 5, 6, 1])
    numpy.testing.assert_array_equal(predicted[1], [0, 2, 3, 0, 0, 4, 5, 6])
    numpy.testing.assert_array_equal(packing.inputs[0][positions[0]], [0, 2, 3, 0, 0, 4, 5, 6])
    numpy.testing.assert_array_equal(packing.inputs[1][positions[1]], [2, 3, 1, 1, 4, 5, 6, 1])
    # Each from its own row (the words alone cannot tell one row's <S> from another's), at the
    # step its direction reads just before: forwards step j, backwards step n - j, for the
    # row's j-th prediction (rows packed longest first, ties in order, as TimeMajor does).
    offsets = numpy.concatenate([[0], numpy.cumsum(packing.batch_sizes)])
    order = numpy.argsort(-(lengths + 2), kind="stable")

    def cell(position):
        step = numpy.searchsorted(offsets, position, side="right") - 1
        return order[position - offsets[step]], step

    rows = numpy.repeat(numpy.arange(len(lengths)), lengths + 1)
    j = numpy.arange(len(rows)) - numpy.repeat(numpy.cumsum(lengths + 1) - (lengths + 1), lengths + 1)
    (forward_rows, forward_steps), (backward_rows, backward_steps) = cell(positions[0]), cell(positions[1])
    numpy.testing.assert_array_equal(forward_rows, rows)
    numpy.testing.assert_array_equal(forward_steps, j)
    numpy.testing.assert_array_equal(backward_rows, rows)
    numpy.testing.assert_array_equal(backward_steps, lengths[rows] - j)
    assert SentencePacking.of(index, lengths).predictions is None
