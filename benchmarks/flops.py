"""FLOP counts of the biLM, for the benchmarks: the textbook count and the count of what runs.

A library of the benchmarks, which import it; it imports none of them. The counts per token of
a corpus, without timing anything: ``python benchmarks/bench_bilm.py --flops-only`` (its corpora).

Every count is 2 FLOPs per multiply-add of a matrix product or convolution; elementwise work
(gates, clips, max-pooling, the optimiser) is left out.

- **Textbook** (`textbook_flops_per_token`): the computation as the paper describes it, per real
  token: the char CNN over all ``max_characters_per_token`` positions, the highway layers and the
  projection, and per LSTM layer and direction the input, recurrent and projection products.
  `BiLM` does less than this (a token cache, a CNN over the positions tokens reach), so a rate
  counted this way credits work that never runs.
- **Performed** (`inference_flops`, `training_step_flops`): the products that do run, as
  `spacy_elmo.bilm` runs them: the encoder once per distinct token of a pass (the token cache),
  over the positions the longest token of each call can reach and one more; the LSTMs over
  every packed row, the sentence boundaries included, and per step over the running rows plus
  the copies products.py adds to make up MIN_ROWS; the encoder's products over the rows
  `addmm_by_blocks` computes (its blocks' added rows included). Not counted: the row padding of
  input-to-gate blocks (at most 3 rows a layer per batch).
- **Straightforward** (`straightforward_flops`): what `reference_layers` runs: the textbook
  count for every slot of the padded batch, boundaries and padding included.
"""

import itertools
from typing import Dict, Iterable, List, Optional, Sequence

import numpy

from spacy_elmo.bilm import BiLMOptions, words_to_ids
from spacy_elmo.bilm.char_ids import BOS_TOKEN, EOS_TOKEN, PAD_CHAR
from spacy_elmo.bilm.products import block_layout
from spacy_elmo.bilm.recurrence.layout import MIN_STEP_ROWS, input_blocks
from spacy_elmo.bilm.token_encoder import MIN_ENCODER_ROWS


def textbook_flops_per_token(o: BiLMOptions) -> Dict[str, float]:
    """FLOPs per token of the textbook computation, by part, and their total."""
    cnn = _cnn_flops_per_token(o, o.max_characters_per_token)
    highway = o.n_highway * 2 * (2 * o.n_filters**2)  # transform and carry
    projection = 2 * o.n_filters * o.projection_dim
    p, c = o.projection_dim, o.lstm_dim
    lstm = 2 * o.n_layers * (2 * p * 4 * c + 2 * p * 4 * c + 2 * c * p)  # input, recurrent, projection
    return {
        "char_cnn": cnn,
        "highway": highway,
        "projection": projection,
        "lstm": lstm,
        "total": cnn + highway + projection + lstm,
    }


def encoder_flops(o: BiLMOptions, n_tokens: int, longest: int) -> float:
    """One call of the token encoder on `n_tokens` tokens whose longest has `longest` character
    ids (begin-of-word, bytes, end-of-word), as CharCNNTokenEncoder runs it: each product over
    the rows `addmm_by_blocks` computes (its blocks' added rows included, at torch's current
    thread count), and each filter's product over a window of padding alone."""
    if n_tokens == 0:
        return 0.0
    positions = min(o.max_characters_per_token, longest + max(w for w, _ in o.filters))
    rows = max(n_tokens, MIN_ENCODER_ROWS)
    flops = 0.0
    for width, n_filters in o.filters:
        per_window = 2 * width * o.char_embedding_dim * n_filters
        flops += per_window * (_blocked(rows * max(positions - width + 1, 0)) + _blocked(1))
    return flops + _blocked(rows) * (o.n_highway * 4 * o.n_filters**2 + 2 * o.n_filters * o.projection_dim)


def _blocked(rows: int) -> int:
    """The rows `addmm_by_blocks` computes for a product of `rows` rows."""
    if rows == 0:
        return 0
    n_blocks, block_rows = block_layout(rows)
    return n_blocks * block_rows


def lstm_flops(o: BiLMOptions, lengths: Iterable[int], min_rows: int = MIN_STEP_ROWS) -> float:
    """Both directions of every layer over sequences of `lengths` steps each (boundaries
    included), packed time-major as BiLSTMStack runs them: at inference, steps of fewer than
    MIN_STEP_ROWS rows computed as MIN_STEP_ROWS (recurrence/layout.py); in training (the hand-written
    backward pass, recurrence/backward.py) as they are (`min_rows` 1)."""
    lengths = sorted(lengths, reverse=True)
    if not lengths:
        return 0.0
    p, c = o.projection_dim, o.lstm_dim
    step_rows = [max(sum(1 for n in lengths if n > t), min_rows) for t in range(lengths[0])]
    # per layer and direction: the input product over all packed rows (in blocks of steps, each
    # of at least min_rows rows at inference), then per step the recurrent and projection
    # products over the running rows
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    offsets = [0] + list(itertools.accumulate(batch_sizes))
    input_rows = sum(max(offsets[end] - offsets[first], min_rows) for first, end in input_blocks(offsets))
    return 2 * o.n_layers * (input_rows * 2 * p * 4 * c + sum(step_rows) * (2 * p * 4 * c + 2 * c * p))


def inference_flops(
    o: BiLMOptions, batches: Sequence[Sequence[Sequence[str]]], cache_size: Optional[int] = None
) -> Dict[str, float]:
    """One pass of `BiLM.forward` over `batches` (lists of tokenised sentences), in this order,
    starting with an empty token cache of `cache_size` entries (its size must not be exceeded:
    the count assumes nothing is evicted).

    RETURNS: FLOPs of the encoder, of the LSTMs and in all, and how many tokens the encoder ran
        on (the sentence boundaries included).
    """
    seen = set()
    encoder = lstm = 0.0
    for batch in batches:
        words = [w for s in batch for w in s]
        if not seen:
            words = [BOS_TOKEN, EOS_TOKEN] + words  # the boundaries go through the encoder first
        ids = words_to_ids(words, o.max_characters_per_token)
        new, new_keys = [], set()
        for row in ids:
            key = row.tobytes()  # the token cache's key: the character ids
            if key not in seen and key not in new_keys:
                new_keys.add(key)
                new.append(row)
        seen |= new_keys
        if new:
            longest = max(int((row != PAD_CHAR + 1).sum()) for row in new)
            encoder += encoder_flops(o, len(new), longest)
        lstm += lstm_flops(o, (len(s) + 2 for s in batch))
    if cache_size is not None and len(seen) > cache_size:
        raise ValueError(
            f"{len(seen)} distinct tokens overflow a token cache of {cache_size}: "
            f"the count assumes each is encoded once; use fewer sentences or a larger cache"
        )
    return {"encoder": encoder, "lstm": lstm, "total": encoder + lstm, "encoded_tokens": len(seen)}


def straightforward_flops(o: BiLMOptions, batches: Sequence[Sequence[Sequence[str]]]) -> float:
    """One pass of `reference_layers` over `batches`: every slot of each padded batch
    (boundaries and padding included) costs the textbook count."""
    per_slot = textbook_flops_per_token(o)["total"]
    return sum(len(batch) * (max(len(s) for s in batch) + 2) for batch in batches) * per_slot


def softmax_flops(
    in_dim: int, n_classes: int, kind: str, cutoffs: Sequence[int], div_value: float, targets: Sequence[int]
) -> float:
    """The output layer's products for `targets` (vocabulary ids): a full softmax scores every
    class; PyTorch's adaptive softmax scores its head (shortlist and one entry per cluster) for
    every target and a tail cluster's projection and classes only for the targets in it."""
    targets = numpy.asarray(targets)
    cuts = [c for c in cutoffs if c < n_classes] if kind == "adaptive" else []
    if not cuts:
        return len(targets) * 2.0 * in_dim * n_classes
    bounds = cuts + [n_classes]
    total = len(targets) * 2.0 * in_dim * (cuts[0] + len(cuts))
    for i in range(len(cuts)):
        hidden = int(in_dim // (div_value ** (i + 1)))  # as nn.AdaptiveLogSoftmaxWithLoss sizes it
        in_cluster = int(numpy.count_nonzero((targets >= bounds[i]) & (targets < bounds[i + 1])))
        total += in_cluster * 2.0 * (in_dim * hidden + hidden * (bounds[i + 1] - bounds[i]))
    return total


def training_step_flops(
    o: BiLMOptions,
    n_words: int,
    longest: int,
    batch_sizes: List[int],
    softmax: Dict,
    targets: Sequence[int],
    lstm_min_rows: int = 1,
) -> float:
    """One pretraining step: the forward products of the encoder over the batch's distinct words
    (`n_words`, boundaries included), the LSTMs over the packed rows (`batch_sizes` running at
    each step; steps of fewer than `lstm_min_rows` rows computed as that many: MIN_ROWS in
    code before the hand-written backward pass) and the softmax over both directions'
    `targets`; the backward pass counted as twice the forward (the gradients of each product's
    input and of its weights)."""
    lengths = [sum(1 for n in batch_sizes if n > row) for row in range(batch_sizes[0])] if batch_sizes else []
    forward = (
        encoder_flops(o, n_words, longest)
        + lstm_flops(o, lengths, min_rows=lstm_min_rows)
        + softmax_flops(o.projection_dim, targets=targets, **softmax)
    )
    return 3 * forward


def _cnn_flops_per_token(o: BiLMOptions, positions: int) -> float:
    return sum(2 * w * o.char_embedding_dim * n * max(positions - w + 1, 0) for w, n in o.filters)
