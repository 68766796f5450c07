"""The context-insensitive token representation: char CNN, highway, projection
(and, with a word table, word vectors joined in front of the CNN's features)."""

from typing import List, Optional, Tuple

import torch
from torch import nn

from .char_ids import token_ids
from .options import BiLMOptions
from .products import addmm_by_blocks, pad_rows

# The character CNN's products (oneDNN's convolutions, MKL's) take another
# method, which rounds differently, for calls of fewer than 16 tokens; a call
# with fewer is made up to this many with copies of a token (products.py), so
# that a token's vector never depends on how many others are encoded with it
# (a warm token cache encodes only the few tokens it misses).
MIN_ENCODER_ROWS = 16

# A filter as `CharCNNTokenEncoder.pooled` takes it: width, weight (width * dim,
# n_filters), bias, value over a window of padding alone (1, n_filters).
Filter = Tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]


class Highway(nn.Module):
    """One highway layer in bilm-tf's convention.

    ``y = g * relu(x W_t + b_t) + (1 - g) * x`` with ``g = sigmoid(x W_c + b_c)``.
    Weights are stored ``(in, out)`` as in the TensorFlow files. The sigmoid is
    computed as ``1/2 + tanh(z / 2) / 2`` (z / 2 and t / 2 exact): torch's
    sigmoid rounds some values differently in its vector and scalar loops, so a
    token's gate would depend on where its row falls; its tanh does not.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.W_carry = nn.Parameter(torch.empty(dim, dim))
        self.b_carry = nn.Parameter(torch.zeros(dim))
        self.W_transform = nn.Parameter(torch.empty(dim, dim))
        self.b_transform = nn.Parameter(torch.zeros(dim))
        for weight in (self.W_carry, self.W_transform):
            nn.init.normal_(weight, std=(1.0 / dim) ** 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (n, dim)
        gate = 0.5 + 0.5 * torch.tanh(0.5 * addmm_by_blocks(self.b_carry, x, self.W_carry))
        transform = torch.relu(addmm_by_blocks(self.b_transform, x, self.W_transform))
        return x + gate * (transform - x)


class CharCNNTokenEncoder(nn.Module):
    """Character ids of tokens to their context-insensitive representation x_k.

    Exactly the 50-position computation of the original model, but convolving
    only over the positions the longest token in the batch can reach: every
    window past a token's end sees only padding, so it yields one fixed value
    per filter, and whether such a window exists depends only on the token's
    length. That value enters the max-pool where it would have.

    With a word table (`BiLMOptions.word_table`), each row of ids ends with the
    token's word id, and its word vector is joined in front of the highway
    layers' output before the projection (ELMoForManyLangs' token encoder).
    `token_ids` is how words become these rows (`char_ids.token_ids`).
    """

    def __init__(self, options: BiLMOptions):
        super().__init__()
        self.max_chars = options.max_characters_per_token
        self.token_ids = token_ids(options)
        self.filter_widths: List[int] = [w for w, _ in options.filters]
        self.n_filters = options.n_filters
        self.activation = torch.relu if options.activation == "relu" else torch.tanh
        # Row 0 is the "no token" id and stays zero; weight files hold the other rows.
        self.char_embed = _embedding_table(options.n_char_ids, options.char_embedding_dim, 1.0)
        self.word_embed: Optional[nn.Parameter] = None  # (n_words + 1, word_dim) with a word table
        if options.word_table is not None:
            self.word_embed = _embedding_table(len(options.word_table.entries) + 1, options.word_dim, 0.25)
        self.convs = nn.ModuleList(nn.Conv1d(options.char_embedding_dim, n, kernel_size=w) for w, n in options.filters)
        self.highways = nn.ModuleList(Highway(options.n_filters) for _ in range(options.n_highway))
        self.projection = nn.Linear(options.n_filters + options.word_dim, options.projection_dim)

    def forward(self, char_ids: torch.Tensor, longest: Optional[int] = None) -> torch.Tensor:
        """char_ids: (n_tokens, width), real tokens only -> (n_tokens, projection_dim);
        width: `token_ids.width`, max_chars character ids (then a word id).

        longest: the most ids before the padding in any row, when the caller
        knows it on the host (else it is read from `char_ids`, a synchronisation
        on a GPU).
        """
        n_tokens = char_ids.shape[0]
        if 0 < n_tokens < MIN_ENCODER_ROWS:
            return self(pad_rows(char_ids, 0, MIN_ENCODER_ROWS), longest)[:n_tokens]
        return self.head(self.pooled(char_ids, self.filters(), longest))

    def filters(self) -> List[Filter]:
        """Each filter as `pooled` takes it: its width, its weight laid out for
        `_convolve`, its bias, and its value over a window of padding alone."""
        pad_embedded = self.char_embed[self.token_ids.pad_id]
        filters = []
        for width, conv in zip(self.filter_widths, self.convs):
            weight = conv.weight.permute(2, 1, 0).reshape(-1, conv.weight.shape[0])  # window element k * dim + channel
            pad_value = addmm_by_blocks(conv.bias, pad_embedded.repeat(width)[None, :], weight)  # (1, n_filters)
            filters.append((width, weight, conv.bias, pad_value))
        return filters

    def pooled(self, ids: torch.Tensor, filters: List[Filter], longest: Optional[int] = None) -> torch.Tensor:
        """The max-pooled convolutions of tokens, before the activation, then
        their word vectors when there is a word table: ids (n_tokens, width) ->
        (n_tokens, n_filters + word_dim). filters: from `filters`, once for any
        number of calls; longest: as in `forward`."""
        pad_id = self.token_ids.pad_id
        char_ids = ids[:, : self.max_chars]
        # A token's length: begin-word, bytes and end-word (everything before the padding).
        lengths = (char_ids != pad_id).sum(dim=1)
        if longest is None:
            longest = int(lengths.max()) if char_ids.shape[0] else 1
        # Up to one position past the widest filter's last window over the longest
        # token, so that every token that has a padding-only window in the full
        # computation (one starting at or after its end) has one here.
        n_positions = min(self.max_chars, longest + max(self.filter_widths))
        embedded = nn.functional.embedding(char_ids[:, :n_positions], self.char_embed)  # (n, positions, dim)
        padding_only = (torch.arange(n_positions, device=char_ids.device) >= lengths[:, None]).unsqueeze(2)
        pooled = []
        for width, weight, bias, pad_value in filters:
            windows = _convolve(embedded, weight, bias, width)  # (n_tokens, n_windows, n_filters)
            # A window that starts at or after the token's end sees only padding: its
            # value is the same for every token, and is always taken from one product
            # of its own, so that no token's vector depends on how long the others in
            # its call are (where the windows reach `max_chars`, a padding-only window
            # computed inside the wide product could round differently).
            pooled.append(torch.where(padding_only[:, : windows.shape[1]], pad_value, windows).amax(dim=1))
        if self.word_embed is not None:
            pooled.append(nn.functional.embedding(ids[:, self.max_chars], self.word_embed))
        return torch.cat(pooled, dim=1)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """The activation, the highway layers, [word vectors; their output]
        and the projection: (n_tokens, n_filters + word_dim) from `pooled` ->
        (n_tokens, projection_dim)."""
        x = self.activation(pooled[:, : self.n_filters])
        for highway in self.highways:
            x = highway(x)
        if pooled.shape[1] > self.n_filters:
            x = torch.cat([pooled[:, self.n_filters :], x], dim=1)
        return addmm_by_blocks(self.projection.bias, x, self.projection.weight.t())


def _embedding_table(n_ids: int, dim: int, scale: float) -> nn.Parameter:
    """An embedding of ids 0..n_ids - 1, uniform in +-scale, row 0 ("no token") zero."""
    table = nn.Parameter(torch.empty(n_ids, dim))
    nn.init.uniform_(table, -scale, scale)
    with torch.no_grad():
        table[0].zero_()
    return table


def _convolve(embedded: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, width: int) -> torch.Tensor:
    """A convolution of `width` over (n, positions, dim) as one matrix product of
    every window, (n * windows, width * dim) @ weight (width * dim, n_filters) +
    bias -> (n, windows, n_filters): the same sums as ``nn.Conv1d`` (bit for bit
    for widths above 1 on MKL), many times faster than oneDNN's convolution for
    the char CNN's few channels."""
    n, positions, dim = embedded.shape
    windows = embedded.unfold(1, width, 1).transpose(2, 3).reshape(-1, width * dim)
    return addmm_by_blocks(bias, windows, weight).view(n, positions - width + 1, -1)
