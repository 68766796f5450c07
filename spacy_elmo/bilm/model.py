"""The ELMo biLM: token representation, then a forward and a backward LSTM stack.

`BiLM` is the PyTorch module; `spacy_elmo.models.BiLMModel` wraps it as a
Thinc model over Docs, and `spacy_elmo.training.PretrainingLM` adds the
softmax to train it.
"""

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable, Hashable, List, Optional, Sequence, Tuple, Union

import numpy
import torch
from torch import nn

from ..device import to_device
from ..errors import ConfigError, InputError
from .carried_state import CarriedState, CopyableLock
from .char_ids import BOS_TOKEN, EOS_TOKEN, batch_to_ids, distinct_words
from .options import BiLMOptions
from .packing import SentencePacking, TimeMajor, reversed_steps
from .recurrence import BiLSTMStack, RecurrenceGraphs
from .token_cache import TokenCache, distinct_rows
from .token_encoder import CharCNNTokenEncoder

PathLike = Union[str, Path]

# `BiLM._encode_by_length`: token lengths (in character ids, with begin- and
# end-word) bounding each group of tokens encoded in one call, and the fewest
# tokens a group gets a call of its own for.
ENCODER_LENGTH_GROUPS = (6, 9, 12, 16, 24)
ENCODER_MIN_GROUP = 64
ENCODER_ROW_MULTIPLE = 16


@dataclass
class BiLMOutput:
    """layers: (n_layers + 1, batch, tokens, 2 * projection_dim), layer 0 the
    token representation twice, zero at absent tokens; mask: (batch, tokens)."""

    layers: torch.Tensor
    mask: torch.Tensor


def first_token_not_finite(layers: numpy.ndarray) -> Optional[int]:
    """The first token (axis 1 of host layers (n_layers, n_tokens, width))
    with a NaN or infinite value, or None: one sum over all the values, which
    NaN and infinities carry through, and the search only if it is not finite."""
    if numpy.isfinite(layers.sum()):
        return None
    bad = ~numpy.isfinite(layers).all(axis=(0, 2))
    return int(bad.argmax()) if bad.any() else None


class BiLM(nn.Module):
    """A character-based bidirectional language model, as in ELMo.

    By default every sentence starts from the zero state, so a sentence's
    vectors never depend on what else is in the batch. ``stateful=True``
    instead carries each batch row's final state over to the same row of the
    next call, as the original TensorFlow implementation did; it exists to
    reproduce reference outputs (see ``reset_states``).

    Two entries: `encode_words` (tokenised sentences -> every token's layers,
    the one the `elmo` component and `embed` use) and `forward` (character ids
    from `batch_to_ids`, the AllenNLP-compatible one). `top_layer_indexed`
    gives, from the words, what the two language models predict from (the
    `perplexity` evaluation). A token's layers are bit
    for bit the same whatever else is in the call, its row order, the token
    cache's state and the thread count, as tests/bilm/test_words.py checks for
    the shipped, fixture and near-zero biLMs (MKL rounds products of a few
    other shapes differently by row count: see that test).

    At inference (no gradients), the representations of tokens already seen are
    served from a bounded cache of ``token_cache_size`` entries. Loading
    weights (`from_allennlp`, ``load_state_dict`` of the biLM or of any of its
    parts) and training empty it; code that edits the token encoder's weights
    in place by hand must call `clear_token_cache` afterwards.

    Several threads may call one biLM at once: what the calls share takes
    turns under a lock (the token cache; the carried-over state of a
    ``stateful`` biLM, whose calls then run one at a time; the CUDA graphs and
    the setting that makes them), and each call gives what it gives alone.
    """

    def __init__(self, options: BiLMOptions, *, stateful: bool = False, token_cache_size: int = 20000):
        super().__init__()
        self.options = options
        self.stateful = stateful
        self.token_encoder = CharCNNTokenEncoder(options)
        self.lstm = BiLSTMStack(options)
        self.token_cache = TokenCache(token_cache_size)
        self._carried = CarriedState()  # a stateful biLM's
        self._graphs_lock = CopyableLock()  # the CUDA graphs' setting
        boundaries = torch.from_numpy(self.token_encoder.token_ids.words_to_ids([BOS_TOKEN, EOS_TOKEN]))
        self.register_buffer("boundary_ids", boundaries, persistent=False)
        # Loading weights, into the biLM or into any of its parts alone, empties the
        # token cache (and makes the CUDA graphs' weights again: the LSTMs' own hook).
        # A module's load_state_dict runs its own hooks and its descendants', never
        # its parents': every part of the token encoder gets the hook.
        for part in self.token_encoder.modules():
            part.register_load_state_dict_post_hook(partial(_forget_token_vectors, self.token_cache))

    @property
    def n_layers(self) -> int:
        """Number of output layers, L + 1."""
        return self.options.n_layers + 1

    @property
    def output_dim(self) -> int:
        return self.options.output_dim

    @classmethod
    def from_allennlp(
        cls,
        options_path: PathLike,
        weights_path: Optional[PathLike] = None,
        *,
        stateful: bool = False,
        token_cache_size: int = 20000,
    ) -> "BiLM":
        """Load AllenNLP/bilm-tf ``options.json`` + ``weights.hdf5``.

        options_path may also be a directory holding both files (as
        ``save_allennlp`` writes them), or a model's name ("elmo-en-small",
        shipped with the package; `weights.resolve_paths`), with weights_path
        left out; or, so left out, an ELMoForManyLangs model's folder as its
        zip unpacks (`efml.read_efml`).
        """
        from .efml import is_efml_folder, read_efml
        from .weights import copy_weights, read_weights, resolve_paths

        if weights_path is None and is_efml_folder(options_path):  # an ELMoForManyLangs model's folder
            options, weights = read_efml(options_path)
        else:
            options_path, weights_path = resolve_paths(options_path, weights_path)
            options = BiLMOptions.from_file(options_path)
            weights = read_weights(weights_path, options, options_path)  # all checked before the model is built
        model = cls(options, stateful=stateful, token_cache_size=token_cache_size)
        copy_weights(model, weights)
        return model

    def save_allennlp(self, directory: PathLike, dtype: str = "float32") -> None:
        """Write ``options.json`` and ``weights.hdf5`` in the bilm-tf layout, the
        weights as `dtype` ("float32", or "float16": half the size, read back as float32)."""
        from .weights import save_weights

        save_weights(self, directory, dtype)

    def clear_token_cache(self) -> None:
        """Forget the cached token representations: call it after changing the
        token encoder's weights in place (e.g. ``param.data.mul_(2)``). Loading
        weights and optimiser steps need no call (see `_token_vectors`). The
        CUDA graphs' copy of the LSTMs' weights is made again too."""
        self.token_cache.clear()
        if self.lstm.graphs is not None:
            self.lstm.graphs.forget_weights()

    def use_cuda_graphs(self, enabled: bool = True, max_graphs: int = 16) -> None:
        """On a GPU, run the LSTMs without gradients from CUDA graphs, a few
        steps a replay, one graph per bucket of row counts, at most `max_graphs`
        kept (see recurrence/graphs.py: faster where the step-by-step recurrence waits
        on Python, at the cost of each graph's GPU memory, and of a float32 copy
        of the LSTMs' weights on the GPU); ``enabled=False`` drops them and frees
        that memory (moving the biLM to the CPU does not). On a CPU, with
        gradients, and in another dtype than float32, nothing changes. Called
        from several threads at once with the same settings, it makes the
        graphs once."""
        with self._graphs_lock:
            graphs = self.lstm.graphs
            if not enabled:
                graphs = None
            elif graphs is None or graphs.max_graphs != max_graphs:
                graphs = RecurrenceGraphs(max_graphs)
            self.lstm.use_paths(replace(self.lstm.paths, graphs=graphs))

    def reset_states(self) -> None:
        """Forget the carried-over state (stateful mode)."""
        self._carried.reset()

    def encode_tokens(self, char_ids: torch.Tensor, longest: Optional[int] = None) -> torch.Tensor:
        """The context-insensitive representation of tokens.

        char_ids: (n, max_chars) -> (n, projection_dim). longest: see
        `CharCNNTokenEncoder.forward`.
        """
        vectors = self.token_encoder(char_ids, longest)
        if vectors.requires_grad:  # a backward pass will give the encoder gradients: see _token_vectors
            vectors.register_hook(self._clear_token_cache_on_backward)
        return vectors

    def _clear_token_cache_on_backward(self, grad: torch.Tensor) -> None:
        self.token_cache.clear()

    def forward(self, char_ids: torch.Tensor) -> BiLMOutput:
        """char_ids: (batch, tokens, max_chars) from ``batch_to_ids``.

        Rows may come in any order and padded to any length, each its tokens
        first and then padding (E108 otherwise, E101/E102 for ids that are not
        character ids): each is computed over its own length only. Under
        ``torch.inference_mode()`` (or ``no_grad``) token vectors come from the
        token cache. The biLM's weights must be float32 (E107).
        """
        self._check_ids(char_ids)
        self._check_float32()
        batch, n_tokens, _ = char_ids.shape
        device = char_ids.device
        mask = char_ids[:, :, 0] > 0
        if batch == 0:
            layers = self.lstm.bias[0].new_zeros(self.n_layers, 0, n_tokens, self.output_dim)
            return BiLMOutput(layers=layers, mask=mask)
        # Each row as indices into the distinct token vectors: <S>, its words, </S>.
        ids = torch.cat([self.boundary_ids.to(device), char_ids[mask]])
        keys, first, inverse_array = distinct_rows(ids)
        first_t = to_device(first, device)
        distinct = self._token_vectors(keys, lambda positions: (ids[first_t[to_device(positions, device)]], None))
        inverse = to_device(inverse_array, device)
        lengths = mask.sum(dim=1) + 2  # with <S> and </S>
        steps = n_tokens + 2
        index = torch.zeros(batch, steps, dtype=torch.long, device=device)
        index[:, 0] = inverse[0]
        index[:, 1 : n_tokens + 1][mask] = inverse[2:]
        index[torch.arange(batch, device=device), lengths - 1] = inverse[1]
        # Packed time-major (packing.py); direction 1 reads each row reversed over its length.
        packing = TimeMajor.of_lengths(lengths, steps)
        order = packing.order
        reversed_positions = reversed_steps(lengths, steps)
        packed_index = torch.stack([packing.pack(index), packing.pack(torch.gather(index, 1, reversed_positions))])
        # float32 even under autocast, so the layers returned are float32 (the products inside
        # the LSTMs are what autocast makes cheaper).
        inputs = nn.functional.embedding(packed_index, distinct.float())  # (2, n_packed, p)
        if self.stateful:
            outputs = self._carried.run(self.lstm, inputs, packing.batch_sizes, order)
        else:
            outputs, _ = self.lstm(inputs, packing.batch_sizes)
        # Gather every real token's vectors, in the caller's row order: the
        # forward direction saw token k at step k + 1, the backward one at
        # step length - 2 - k; layer 0 is the token vector in both halves.
        forward_rows = packing.positions[:, 1 : n_tokens + 1][mask]
        backward_rows = torch.gather(packing.positions, 1, reversed_positions)[:, 1 : n_tokens + 1][mask]
        values = torch.stack(
            [torch.cat([out[0][forward_rows], out[1][backward_rows]], dim=1) for out in [inputs, *outputs]]
        )  # (n_layers + 1, n_real_tokens, 2p)
        layers = values.new_zeros(self.n_layers, batch * n_tokens, self.output_dim)
        layers[:, mask.reshape(-1)] = values
        return BiLMOutput(layers=layers.view(self.n_layers, batch, n_tokens, self.output_dim), mask=mask)

    def encode_words(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """Every token's layers, from the words: the entry of the `elmo`
        component and `embed`.

        sentences: tokenised sentences, each a list of str.
        RETURNS: (n_layers + 1, n_tokens, 2 * projection_dim), the tokens of all
            sentences one after the other (split them by the sentences' lengths).

        The same layers as `forward` over ``batch_to_ids(sentences)``, made
        without character ids for the whole batch: one pass on the host finds the
        distinct words and lays the batch out as index arrays (`distinct_words`,
        `SentencePacking`); the token cache is keyed by the word, so only the
        words it misses get character ids and go through the encoder; nothing is
        read back from the device. With gradients on, the layers carry them, as
        `forward`'s do.
        """
        if self.stateful:  # the carried-over state follows the rows of `forward`
            output = self.forward(batch_to_ids([list(s) for s in sentences], scheme=self.token_encoder.token_ids))
            return output.layers[:, output.mask]
        return self.encode_indexed(*distinct_words(sentences))

    def encode_indexed(self, words: Sequence[str], index: numpy.ndarray, lengths: numpy.ndarray) -> torch.Tensor:
        """`encode_words` from the batch's words already indexed on the host, as
        `distinct_words` gives them (the `elmo` component makes them from spaCy's
        ORTH ids, with no Python per token).

        words: the distinct words, ``<S>`` and ``</S>`` first; index (n_tokens,)
            every token's word, sentence after sentence; lengths (n_sentences,)
            each sentence's number of tokens (E105 otherwise).
        RETURNS: as `encode_words`.
        """
        index, lengths = self._check_indexed(words, index, lengths)
        self._check_float32()
        if self.stateful:
            tokens = [words[i] for i in index.tolist()]
            ends = numpy.cumsum(lengths).tolist()
            return self.encode_words([tokens[end - n : end] for end, n in zip(ends, lengths.tolist())])
        vectors = self._word_vectors(words)
        if not len(index):
            return vectors.new_zeros(self.n_layers, 0, self.output_dim, dtype=torch.float32)
        packing = SentencePacking.of(index, lengths)
        inputs, outputs = self._run_packed(vectors, packing)
        rows = to_device(packing.outputs, self.boundary_ids.device)
        if torch.is_grad_enabled() and any(out.requires_grad for out in [inputs, *outputs]):
            return torch.stack([torch.cat([out[0][rows[0]], out[1][rows[1]]], dim=1) for out in [inputs, *outputs]])
        p = inputs.shape[2]
        layers = inputs.new_empty(self.n_layers, rows.shape[1], 2 * p)
        for layer, out in enumerate([inputs, *outputs]):
            torch.index_select(out[0], 0, rows[0], out=layers[layer, :, :p])
            torch.index_select(out[1], 0, rows[1], out=layers[layer, :, p:])
        return layers

    def top_layer_indexed(
        self, words: Sequence[str], index: numpy.ndarray, lengths: numpy.ndarray
    ) -> Tuple[torch.Tensor, numpy.ndarray]:
        """What the two language models predict from: the top LSTM layer's
        output before each of their predictions, from the words as
        `encode_indexed` takes them (the same internals, the boundaries kept).

        Each sentence ``w1 … wn`` gives n + 1 predictions per direction, in the
        sentence's order: the forward LM predicts ``w1 … wn </S>`` from its
        outputs at ``<S> w1 … wn``, the backward LM ``<S> w1 … wn`` from its
        outputs at ``w1 … wn </S>``. Every sentence starts from the zero state,
        as in pretraining, even for a ``stateful`` biLM; no dropout.

        RETURNS: (outputs, predicted): outputs (2, n_tokens + n_sentences,
            projection_dim) on the model's device, direction first; predicted
            (2, n_tokens + n_sentences) int64 on the host, the word (index into
            `words`) each output predicts.
        """
        index, lengths = self._check_indexed(words, index, lengths)
        self._check_float32()
        vectors = self._word_vectors(words)
        if not len(lengths):
            return vectors.new_zeros(2, 0, vectors.shape[1], dtype=torch.float32), numpy.zeros(
                (2, 0), dtype=numpy.int64
            )
        packing = SentencePacking.of(index, lengths, predictions=True)
        _, outputs = self._run_packed(vectors, packing)
        positions = to_device(packing.predictions[0], self.boundary_ids.device)
        top = outputs[-1]
        return torch.stack([top[0][positions[0]], top[1][positions[1]]]), packing.predictions[1]

    def _check_indexed(
        self, words: Sequence[str], index: numpy.ndarray, lengths: numpy.ndarray
    ) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """index and lengths as int64 arrays; E109 unless they hold integers,
        E105 where they do not fit `words`."""
        index, lengths = _integers(index, "index"), _integers(lengths, "lengths")
        found = None
        if list(words[:2]) != [BOS_TOKEN, EOS_TOKEN]:
            found = f"words starting {list(words[:2])}"
        elif len(set(words)) != len(words):
            seen: set = set()
            found = f"the word {next(w for w in words if w in seen or seen.add(w))!r} more than once"
        elif index.ndim != 1 or lengths.ndim != 1 or int(lengths.sum()) != len(index) or (lengths < 0).any():
            found = f"{index.size} indices and lengths summing to {int(lengths.sum())}"
        elif len(index) and (int(index.min()) < 0 or int(index.max()) >= len(words)):
            found = f"indices from {int(index.min())} to {int(index.max())}"
        if found is not None:
            raise InputError("E105", n_words=len(words), n_tokens=index.size, found=found)
        return index, lengths

    def _word_vectors(self, words: Sequence[str]) -> torch.Tensor:
        """The token vectors of the distinct `words` (len(words), projection_dim),
        through the token cache, keyed by the word."""
        device = self.boundary_ids.device
        scheme = self.token_encoder.token_ids

        def char_ids(positions: numpy.ndarray) -> Tuple[torch.Tensor, int]:
            ids = scheme.words_to_ids([words[i] for i in positions.tolist()])
            longest = int(scheme.lengths(ids).max(initial=1))  # known here: no read from the device
            return to_device(ids, device), longest

        def encode(positions: numpy.ndarray) -> torch.Tensor:
            ids = scheme.words_to_ids([words[i] for i in positions.tolist()])
            return self._encode_by_length(ids, device)

        return self._token_vectors(words, char_ids, encode)

    def _run_packed(self, vectors: torch.Tensor, packing: SentencePacking) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """The word `vectors` read in `packing`'s layout and run through the
        LSTMs from the zero state.

        RETURNS: (inputs, outputs): inputs (2, n_packed, projection_dim), the
            token vector at each packed position; outputs, each LSTM layer's
            (2, n_packed, projection_dim).
        """
        # float32 even under autocast, as in `forward`.
        inputs = nn.functional.embedding(to_device(packing.inputs, self.boundary_ids.device), vectors.float())
        outputs, _ = self.lstm(inputs, packing.batch_sizes)
        return inputs, outputs

    def _encode_by_length(self, ids: numpy.ndarray, device: torch.device) -> torch.Tensor:
        """The token encoder over host character ids (n, max_chars), the tokens
        in groups of similar length (ENCODER_LENGTH_GROUPS), each group's
        windows only as long as its longest token: most words are short, and
        one long one (a URL) would otherwise make every token's windows reach
        max_chars. The filters are laid out once for all groups, and the
        activation, highway layers and projection run once over all of them. A
        token's vector is the same whatever else is in its call (the class's
        promise), so grouping changes no value."""
        lengths = self.token_encoder.token_ids.lengths(ids)
        groups = numpy.searchsorted(numpy.asarray(ENCODER_LENGTH_GROUPS), lengths)
        if len(ids) < 2 * ENCODER_MIN_GROUP or (groups == groups[0]).all():
            return self.token_encoder(to_device(ids, device), int(lengths.max(initial=1)))
        encoder = self.token_encoder
        filters = encoder.filters()  # laid out once for every group
        order = numpy.argsort(groups, kind="stable")
        ends = numpy.searchsorted(groups[order], numpy.arange(len(ENCODER_LENGTH_GROUPS) + 1), side="right")
        parts, taken, first, offset = [], [], 0, 0
        for end in ends.tolist():
            # A small group joins the next one rather than paying a call of its own.
            if end - first >= ENCODER_MIN_GROUP or (end == len(ids) and end > first):
                rows = order[first:end]
                # Rows up to a multiple of ENCODER_ROW_MULTIPLE, copies of the first.
                padded = numpy.concatenate([rows, numpy.full(-len(rows) % ENCODER_ROW_MULTIPLE, rows[0])])
                parts.append(encoder.pooled(to_device(ids[padded], device), filters, int(lengths[rows].max())))
                taken.append(numpy.arange(offset, offset + len(rows)))
                first, offset = end, offset + len(padded)
        # One head for every group (the copies included, so its rows stay a multiple of
        # ENCODER_ROW_MULTIPLE), then each token's row in the order of `ids`.
        where = numpy.empty(len(ids), dtype=numpy.int64)
        where[order] = numpy.concatenate(taken)
        return encoder.head(torch.cat(parts))[to_device(where, device)]

    def _token_vectors(
        self,
        keys: Sequence[Hashable],
        char_ids: Callable[[numpy.ndarray], Tuple[torch.Tensor, Optional[int]]],
        encode: Optional[Callable[[numpy.ndarray], torch.Tensor]] = None,
    ) -> torch.Tensor:
        """Vectors of the distinct tokens `keys` (n_distinct, projection_dim),
        through the token cache where it is valid.

        char_ids: positions in `keys` (int64 array) -> their character ids
            (n, max_chars), on the model's device, and their longest token's
            number of ids when known on the host (else None).
        encode: positions in `keys` -> their vectors without gradients (the
            token encoder over `char_ids` when None).
        """
        parameters = list(self.token_encoder.parameters())
        needs_grad = torch.is_grad_enabled() and any(p.requires_grad for p in parameters)
        # The cache never serves vectors of other weights, without torch's private
        # version counters or a checksum of the weights, because an optimiser only
        # moves parameters that hold a gradient, gradients reach the encoder only
        # through a backward pass over encode_tokens' output (which empties the
        # cache), the cache stays empty while any parameter holds a gradient, and
        # loading weights empties it (load_weights, load_state_dict).
        if needs_grad or any(p.grad is not None for p in parameters):
            self.token_cache.clear()
            return self.encode_tokens(*char_ids(numpy.arange(len(keys))))
        # Nor are vectors valid across devices, dtypes, storage or arithmetic (autocast, TF32).
        device = self.boundary_ids.device.type
        arithmetic = (
            torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device),
            device == "cuda" and (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32),
        )
        weights_key = tuple((p.data_ptr(), p.device, p.dtype) for p in parameters)
        if encode is None:

            def encode(missing: numpy.ndarray) -> torch.Tensor:
                return self.token_encoder(*char_ids(missing))

        return self.token_cache.lookup(keys, encode, (weights_key, arithmetic))

    def _check_ids(self, char_ids: torch.Tensor) -> None:
        """E101 to E108 unless `char_ids` are as `batch_to_ids` makes them (one
        read from the device)."""
        width, max_id = self.token_encoder.token_ids.width, self.token_encoder.token_ids.max_id
        if (
            char_ids.dim() != 3
            or char_ids.shape[2] != width
            or char_ids.dtype not in (torch.int64, torch.int32, torch.int16)
        ):
            raise InputError("E101", n_chars=width, max_id=max_id, shape=tuple(char_ids.shape), dtype=char_ids.dtype)
        if not char_ids.numel():
            return
        tokens = char_ids[:, :, 0] > 0
        after_padding = tokens[:, 1:] & ~tokens[:, :-1]
        filled_padding = char_ids.ne(0).any(dim=2) & ~tokens
        low, high, row_after, row_filled = torch.stack(
            [
                char_ids.min().long(),
                char_ids.max().long(),
                _first_row(after_padding),
                _first_row(filled_padding),
            ]
        ).tolist()
        if low < 0 or high > max_id:
            raise InputError("E102", found=low if low < 0 else high, n_characters=max_id + 1, max_id=max_id)
        if row_after >= 0:
            raise InputError("E108", found=f"a token after padding in row {row_after}")
        if row_filled >= 0:
            raise InputError("E108", found=f"a padding slot (first id 0) holding other ids in row {row_filled}")

    def _check_float32(self) -> None:
        """E107 unless the token encoder and the LSTMs hold float32 weights (a
        parameter of each: `.double()`, `.half()` and `.to(dtype)` convert whole modules)."""
        for part, weight in (("token encoder", self.token_encoder.char_embed), ("LSTMs", self.lstm.W_proj[0])):
            if weight.dtype != torch.float32:
                raise ConfigError("E107", part=part, dtype=weight.dtype)


def _integers(values: numpy.ndarray, name: str) -> numpy.ndarray:
    """`values` as an int64 array; E109 if they are not integers (a float would
    be truncated to another word or length), unless there are none."""
    array = numpy.asarray(values)
    if array.size and array.dtype.kind not in "iu":
        raise InputError("E109", name=name, dtype=array.dtype)
    return array.astype(numpy.int64, copy=False)


def _first_row(flags: torch.Tensor) -> torch.Tensor:
    """The first row of (rows, n) `flags` holding a True, or -1, on the device."""
    hit = flags.any(dim=1)
    return torch.where(hit.any(), hit.int().argmax(), -1).long()


def _forget_token_vectors(cache: TokenCache, module: nn.Module, incompatible_keys) -> None:
    cache.clear()
