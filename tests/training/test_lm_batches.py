import numpy
import torch

from spacy_elmo.bilm import words_to_ids
from spacy_elmo.training.data.lm_batches import collate, plan_epoch, plan_sorted, segments, shard
from spacy_elmo.training.data.vocab import LMVocab


def test_segments_cut_long_sentences_and_drop_empty_ones():
    offsets = numpy.array([0, 3, 3, 10, 12])
    starts, lengths = segments(offsets, max_length=4)
    assert starts.tolist() == [0, 3, 7, 10]
    assert lengths.tolist() == [3, 4, 3, 2]


def test_an_epoch_plan_covers_every_segment_once_within_the_budget():
    rng = numpy.random.default_rng(0)
    lengths = rng.integers(1, 40, size=500)
    plan = plan_epoch(lengths, tokens_per_batch=200, seed=3, epoch=1)
    assert sorted(numpy.concatenate(plan).tolist()) == list(range(500))
    assert all(len(b) == 1 or len(b) * (lengths[b].max() + 1) <= 200 for b in plan)
    assert [b.tolist() for b in plan] == [b.tolist() for b in plan_epoch(lengths, 200, 3, 1)]
    assert [b.tolist() for b in plan] != [b.tolist() for b in plan_epoch(lengths, 200, 3, 2)]
    assert sorted(numpy.concatenate(plan_sorted(lengths, 200)).tolist()) == list(range(500))


def test_shards_are_equal_in_number_and_cover_the_plan():
    plan = [numpy.array([i]) for i in range(5)]
    shards = [shard(plan, rank, 2) for rank in range(2)]
    assert [len(s) for s in shards] == [3, 3]
    assert sorted(int(b[0]) for s in shards for b in s) == [0, 0, 1, 2, 3, 4]


def test_collate_packs_both_directions_with_their_targets():
    vocab = LMVocab(["<S>", "</S>", "<UNK>", "the", "cat", "sat"])
    words = ["the", "cat", "sat", "zebra"]
    sentences = [numpy.array([0, 3]), numpy.array([0, 1, 2])]  # "the zebra", "the cat sat"
    batch = collate(sentences, words, vocab.ids(words), vocab.bos_id, vocab.eos_id, 50)
    assert batch.batch_sizes == [2, 2, 2, 1]  # rows longest first: 4 steps and 3
    names = ["<S>", "</S>", *(words[i] for i in numpy.unique(numpy.concatenate(sentences)))]
    torch.testing.assert_close(batch.char_ids, torch.from_numpy(words_to_ids(names)))

    def unpack(values, row):
        offsets = numpy.cumsum([0, *batch.batch_sizes])
        return [values[offsets[t] + row] for t in range(len(batch.batch_sizes)) if row < batch.batch_sizes[t]]

    expected = [  # per direction: each row's inputs and targets
        ([["<S>", "the", "cat", "sat"], ["<S>", "the", "zebra"]],
         [["the", "cat", "sat", "</S>"], ["the", "<UNK>", "</S>"]]),
        ([["</S>", "sat", "cat", "the"], ["</S>", "zebra", "the"]],
         [["sat", "cat", "the", "<S>"], ["<UNK>", "the", "<S>"]]),
    ]
    for d, (inputs, targets) in enumerate(expected):
        for row in range(2):
            assert [names[i] for i in unpack(batch.index[d].tolist(), row)] == inputs[row]
            assert [vocab.words[i] for i in unpack(batch.targets[d].tolist(), row)] == targets[row]
    assert batch.n_targets == 7
