"""The forward and backward language models of a biLM, for training (`PretrainingLM`).

Not the biLM itself (`spacy_elmo.bilm.BiLM`, the PyTorch module that ships)
nor its Thinc wrapper (`spacy_elmo.models.BiLMModel`): `PretrainingLM` puts
the softmax on top of a `BiLM` to train it, and is dropped at export.

Peters et al. (2018), eq. 1: the two LMs are trained jointly, maximising

    sum_k  log p(t_k | t_1 … t_k-1; Θx, Θ→LSTM, Θs) + log p(t_k | t_k+1 … t_N; Θx, Θ←LSTM, Θs)

with the token representation Θx (the biLM's character CNN) and the softmax
Θs shared, and a separate LSTM stack per direction (the biLM's own). Every
sentence starts from the zero state, as the biLM runs at inference.
"""
import torch
from torch import nn
from torch.nn import functional as F

from ...bilm import BiLM
from ...device import to_device
from ..data.lm_batches import Batch, WordBatch
from .softmax import SoftmaxHead


class PretrainingLM(nn.Module):
    """A `BiLM` with the shared softmax: the log-probabilities of the targets
    of a pretraining `Batch` (data/lm_batches.py)."""

    def __init__(self, bilm: BiLM, softmax: SoftmaxHead, dropout: float = 0.0):
        super().__init__()
        self.bilm = bilm
        self.softmax = softmax
        # On the token representations going into the LSTMs, between the LSTM
        # layers and on the top layer going into the softmax; in training only.
        self.dropout = nn.Dropout(dropout)

    def forward(self, batch: Batch) -> torch.Tensor:
        """The log-probability of every target: (2, n_targets), direction first."""
        hidden = self.top_layer(batch)
        log_probs = self.softmax.target_log_prob(hidden.reshape(-1, hidden.shape[2]), batch.targets.reshape(-1))
        return log_probs.view(2, -1)

    def log_probs_of_words(self, batch: WordBatch) -> torch.Tensor:
        """The log-probability of every target of a batch given as words, for
        evaluation (no dropout; the token cache serves words seen before):
        (2, n_targets), direction first, each row's targets in the row's order
        (`BiLM.top_layer_indexed`). The same values as `forward` over the
        character-id `Batch` of the same rows, in another order."""
        hidden, predicted = self.bilm.top_layer_indexed(batch.words, batch.index, batch.lengths)
        targets = to_device(batch.vocab_ids[predicted], hidden.device)
        log_probs = self.softmax.target_log_prob(hidden.reshape(-1, hidden.shape[2]), targets.reshape(-1))
        return log_probs.view(2, -1)

    def top_layer(self, batch: Batch) -> torch.Tensor:
        """The top LSTM layer at every position: (2, n_packed, projection_dim),
        in the (packed) order of `batch.targets`."""
        vectors = self.bilm.encode_tokens(batch.char_ids)  # (n_words, p)
        inputs = self.dropout(F.embedding(batch.index, vectors))  # (2, n_packed, p)
        between = self.dropout.p if self.training else 0.0
        outputs, _ = self.bilm.lstm(inputs, batch.batch_sizes, dropout=between)
        return self.dropout(outputs[-1])

