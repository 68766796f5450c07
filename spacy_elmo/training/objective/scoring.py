"""Perplexity of the two language models over batches (`nll_sums`, `Perplexity`).

The arithmetic shared by the trainer's dev evaluation and by training/perplexity.py,
which scores an exported model over a text file (the `perplexity` function
behind the CLI command in cli/perplexity.py).

Every prediction counts: per sentence its words and the closing boundary
(``</S>`` for the forward LM, ``<S>`` for the backward LM), each scored with
the exact, fully normalised log-probability of its vocabulary entry (``<UNK>``
for a word outside the vocabulary).
"""
import math
from dataclasses import asdict, dataclass
from typing import Iterable, Union

import torch

from ...errors import DivergedRunError, InputError
from ..data.lm_batches import Batch, WordBatch
from .lm import PretrainingLM


@dataclass
class Perplexity:
    forward: float
    backward: float
    mean: float  # exp of the mean cross-entropy of both LMs, as bilm-tf reports it
    tokens: int  # predictions per direction

    @classmethod
    def from_sums(cls, nll_forward: float, nll_backward: float, tokens: int, what: str = "measured") -> "Perplexity":
        """The perplexities of summed negative log-likelihoods over `tokens`
        predictions per direction. Never NaN or infinite: no predictions is a
        coded error (E504), and so is a perplexity that is not a finite number
        (E506, a diverged model); `what` names the figure in the message."""
        if tokens == 0:
            raise InputError("E504", what=f"the {what} text", detail="no predictions")
        ppl = cls(
            forward=_exp(nll_forward / tokens),
            backward=_exp(nll_backward / tokens),
            mean=_exp((nll_forward + nll_backward) / (2 * tokens)),
            tokens=int(tokens),
        )
        if not all(math.isfinite(v) for v in (ppl.forward, ppl.backward, ppl.mean)):
            raise DivergedRunError(
                "E506", what=what, forward=ppl.forward, backward=ppl.backward, tokens=f"{tokens:,}"
            )
        return ppl

    def to_dict(self) -> dict:
        return asdict(self)


def nll_sums(lm: PretrainingLM, batches: Iterable[Union[Batch, WordBatch]], device: torch.device) -> torch.Tensor:
    """(negative log-likelihood forward, backward, number of predictions), float64.

    batches: character-id batches (moved to `device`), or batches of words
        (`WordBatch`, scored by `PretrainingLM.log_probs_of_words` on the
        model's own device): the same figures for the same rows.
    """
    was_training = lm.training
    lm.eval()
    sums = torch.zeros(3, dtype=torch.float64)
    try:
        with torch.no_grad():
            for batch in batches:
                if isinstance(batch, WordBatch):
                    log_probs = lm.log_probs_of_words(batch).double().cpu()
                else:
                    log_probs = lm(batch.to(device)).double().cpu()
                sums[0] -= log_probs[0].sum()
                sums[1] -= log_probs[1].sum()
                sums[2] += log_probs.shape[1]
    finally:
        lm.train(was_training)
    return sums


def _exp(x: float) -> float:
    return math.exp(x) if x < 700 else math.inf  # (NaN stays NaN)
