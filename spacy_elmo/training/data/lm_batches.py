"""Sentences to training batches: length-bucketed plans and the tensors of a batch.

The pretraining language models' batches, with their targets; not
`spacy_elmo.bilm.batching`, which only groups sentences by length for the
biLM at inference (embed). Both pack rows with bilm/packing.py.

A plan is a list of batches, each an array of segment indices (a segment is a
sentence, or a piece of one longer than the corpus's ``max_length``). Each
batch holds at most ``tokens_per_batch`` positions with padding counted
(rows x (longest + 1)), at least one segment. An epoch's plan depends only on
the seed and the epoch number, so a resumed run sees the same batches.
"""
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy
import torch

from ...bilm import words_to_ids
from ...bilm.char_ids import BOS_TOKEN, EOS_TOKEN, words_with_boundaries
from ...bilm.packing import TimeMajor
from .prepared import PreparedCorpus
from .vocab import LMVocab

# Segments are sorted by length within pools of about this many batches.
_BATCHES_PER_POOL = 100


@dataclass
class Batch:
    """One batch for the two language models, packed time-major.

    A row is ``<S> w1 … wn`` for the forward LM and ``</S> wn … w1`` for the
    backward LM (what each reads before each of its predictions); its targets
    are ``w1 … wn </S>`` and ``wn … w1 <S>``. Rows are packed time-major by
    `spacy_elmo.bilm.packing.TimeMajor`, as the biLM packs its own.
    """

    char_ids: torch.Tensor  # (n_words, max_chars): the batch's distinct words, <S> and </S> first
    index: torch.Tensor  # (2, n_packed): each position's row of char_ids
    batch_sizes: List[int]  # rows running at each step, non-increasing
    targets: torch.Tensor  # (2, n_packed): each position's target vocabulary id

    @property
    def n_targets(self) -> int:
        """Predictions per direction: the words and one sentence boundary per row."""
        return int(self.targets.shape[1])

    def to(self, device) -> "Batch":
        return Batch(self.char_ids.to(device), self.index.to(device), self.batch_sizes, self.targets.to(device))


@dataclass
class WordBatch:
    """One batch of segments as words, for the biLM's word-level entry
    (`BiLM.top_layer_indexed`, which lays out the packing and the targets).

    words: the batch's distinct words, ``<S>`` and ``</S>`` first (as
        `spacy_elmo.bilm.char_ids.words_with_boundaries` gives them);
    index: (n_tokens,) every token's word, segment after segment;
    lengths: (rows,) each segment's number of tokens;
    vocab_ids: (len(words),) each word's vocabulary id, <UNK>'s when it has none.
    """

    words: List[str]
    index: numpy.ndarray
    lengths: numpy.ndarray
    vocab_ids: numpy.ndarray


class CorpusBatches:
    """The batches of a prepared corpus for a vocabulary."""

    def __init__(self, corpus: PreparedCorpus, vocab: LMVocab, max_length: int, tokens_per_batch: int, max_chars: int):
        self.corpus = corpus
        self.vocab = vocab
        self.tokens_per_batch = tokens_per_batch
        self.max_chars = max_chars
        self.starts, self.lengths = segments(corpus.offsets, max_length)
        self.vocab_ids = vocab.ids(corpus.words)

    def __len__(self) -> int:
        """The number of segments."""
        return len(self.lengths)

    def epoch(self, seed: int, epoch: int, rank: int = 0, world_size: int = 1) -> List[numpy.ndarray]:
        """This process's share of an epoch's shuffled plan."""
        return shard(plan_epoch(self.lengths, self.tokens_per_batch, seed, epoch), rank, world_size)

    def evaluation(self, rank: int = 0, world_size: int = 1) -> List[numpy.ndarray]:
        """This process's share of all segments, each once, longest first."""
        return plan_sorted(self.lengths, self.tokens_per_batch)[rank::world_size]

    def batch(self, indices: numpy.ndarray) -> Batch:
        tokens, starts, lengths = self.corpus.tokens, self.starts, self.lengths
        sentences = [tokens[starts[i] : starts[i] + lengths[i]] for i in indices]
        return collate(
            sentences, self.corpus.words, self.vocab_ids, self.vocab.bos_id, self.vocab.eos_id, self.max_chars
        )

    def word_batch(self, indices: numpy.ndarray) -> WordBatch:
        """The segments `indices` as words: the same rows as `batch` gives,
        without character ids."""
        starts, lengths = self.starts[indices], self.lengths[indices]
        # Every token's position in the corpus, segment after segment.
        ends = numpy.cumsum(lengths)
        positions = numpy.arange(int(ends[-1]) if len(ends) else 0) + numpy.repeat(starts - (ends - lengths), lengths)
        distinct, inverse = numpy.unique(self.corpus.tokens[positions], return_inverse=True)
        words, where = words_with_boundaries([self.corpus.words[i] for i in distinct])
        vocab_ids = numpy.empty(len(words), dtype=numpy.int64)
        vocab_ids[:2] = self.vocab.bos_id, self.vocab.eos_id
        vocab_ids[where] = self.vocab_ids[distinct]
        return WordBatch(words, where[inverse.reshape(-1)], lengths.astype(numpy.int64), vocab_ids)


def segments(offsets: numpy.ndarray, max_length: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(starts, lengths) of the sentences given by `offsets`, each cut into
    pieces of at most `max_length` tokens; empty sentences are dropped."""
    starts, lengths = offsets[:-1], numpy.diff(offsets)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    n_pieces = -(-lengths // max_length)
    sentence = numpy.repeat(numpy.arange(len(lengths)), n_pieces)
    piece = numpy.arange(n_pieces.sum()) - numpy.repeat(numpy.cumsum(n_pieces) - n_pieces, n_pieces)
    piece_starts = starts[sentence] + piece * max_length
    piece_lengths = numpy.minimum(max_length, lengths[sentence] - piece * max_length)
    return piece_starts.astype(numpy.int64), piece_lengths.astype(numpy.int64)


def plan_epoch(lengths: numpy.ndarray, tokens_per_batch: int, seed: int, epoch: int) -> List[numpy.ndarray]:
    """Batches of segment indices for one epoch: shuffled, bucketed by length."""
    rng = numpy.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    per_batch = max(1.0, tokens_per_batch / (float(lengths.mean()) + 1.0)) if len(lengths) else 1.0
    pool = max(1, int(per_batch * _BATCHES_PER_POOL))
    batches: List[numpy.ndarray] = []
    for begin in range(0, len(order), pool):
        chunk = order[begin : begin + pool]
        chunk = chunk[numpy.argsort(-lengths[chunk], kind="stable")]
        batches.extend(budget_batches(chunk, lengths, tokens_per_batch))
    permutation = rng.permutation(len(batches))
    return [batches[i] for i in permutation]


def plan_sorted(lengths: numpy.ndarray, tokens_per_batch: int) -> List[numpy.ndarray]:
    """Batches of all segments, longest first, for evaluation."""
    order = numpy.argsort(-lengths, kind="stable")
    return budget_batches(order, lengths, tokens_per_batch)


def shard(batches: List[numpy.ndarray], rank: int, world_size: int) -> List[numpy.ndarray]:
    """This process's share: every world_size-th batch, the plan first padded
    by repeating its start so that every process gets as many batches."""
    if world_size == 1 or not batches:
        return batches
    n = -(-len(batches) // world_size) * world_size
    padded = [batches[i % len(batches)] for i in range(n)]
    return padded[rank::world_size]


def budget_batches(order: numpy.ndarray, lengths: numpy.ndarray, tokens_per_batch: int) -> List[numpy.ndarray]:
    """Cut `order` (indices of `lengths`, longest first) into batches of at
    most `tokens_per_batch` positions, padding and the boundary of each row
    counted: rows x (longest + 1), at least one row.

    Training's plans and perplexity.py (through `plan_sorted`) all batch with
    this one function. `spacy_elmo.bilm.batching.length_sorted_batches` does
    not fit: it bounds the number of rows, not the padded positions. Nor does
    spaCy's `minibatch_by_padded_size`: it fills batches from the shortest
    rows up, which gives other batches than these (and so other weights than
    runs made so far) for the same seed.
    """
    batches = []
    begin = 0
    sorted_lengths = lengths[order] + 1
    while begin < len(order):
        # Rows fit while rows x longest (the first) stays within the budget.
        rows = max(1, tokens_per_batch // int(sorted_lengths[begin]))
        batches.append(order[begin : begin + rows])
        begin += rows
    return batches


def collate(
    sentences: Sequence[numpy.ndarray],
    words: Sequence[str],
    vocab_ids: numpy.ndarray,
    bos_id: int,
    eos_id: int,
    max_chars: int,
) -> Batch:
    """The tensors of a batch.

    sentences: each an array of word ids, ids into `words` (the strings) and
        `vocab_ids` (each word's vocabulary id, <UNK>'s when it has none).
    """
    lengths = numpy.fromiter((len(s) for s in sentences), dtype=numpy.int64, count=len(sentences))
    distinct, inverse = numpy.unique(numpy.concatenate(sentences), return_inverse=True)
    char_ids = words_to_ids([BOS_TOKEN, EOS_TOKEN, *(words[i] for i in distinct)], max_chars)
    local = inverse + 2  # rows of char_ids: 0 <S>, 1 </S>, then the words
    targets = vocab_ids[distinct][inverse]
    ends = numpy.cumsum(lengths)
    rows, steps = len(sentences), int(lengths.max()) + 1
    # Padded (direction, row, step) in the given row order, -1 past each row's end.
    index = numpy.full((2, rows, steps), -1, dtype=numpy.int64)
    target = numpy.full((2, rows, steps), -1, dtype=numpy.int64)
    for row in range(rows):
        n, end = int(lengths[row]), int(ends[row])
        words_here, targets_here = local[end - n : end], targets[end - n : end]
        index[0, row, 0], index[1, row, 0] = 0, 1
        index[0, row, 1 : n + 1] = words_here
        index[1, row, 1 : n + 1] = words_here[::-1]
        target[0, row, :n], target[0, row, n] = targets_here, eos_id
        target[1, row, :n], target[1, row, n] = targets_here[::-1], bos_id
    # Packed as the biLM packs its rows (bilm/packing.py): one step per position.
    packing = TimeMajor.of_lengths(torch.from_numpy(lengths + 1), steps)
    index_t, target_t = torch.from_numpy(index), torch.from_numpy(target)
    return Batch(
        char_ids=torch.from_numpy(char_ids),
        index=torch.stack([packing.pack(index_t[0]), packing.pack(index_t[1])]),
        batch_sizes=packing.batch_sizes,
        targets=torch.stack([packing.pack(target_t[0]), packing.pack(target_t[1])]),
    )
