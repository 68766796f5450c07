"""The optimiser and the learning-rate schedule."""
import math
from typing import Iterable, Optional

import torch

from .config import OptimizerSettings, ScheduleSettings


def make_optimizer(params: Iterable[torch.nn.Parameter], settings: OptimizerSettings) -> torch.optim.Optimizer:
    if settings.name == "adam":
        return torch.optim.Adam(
            params, lr=settings.learn_rate, betas=(settings.beta1, settings.beta2), eps=settings.eps,
            weight_decay=settings.weight_decay,
        )
    if settings.name == "adagrad":
        # bilm-tf's choice, with its initial accumulator of 1.
        return torch.optim.Adagrad(
            params, lr=settings.learn_rate, initial_accumulator_value=1.0, weight_decay=settings.weight_decay
        )
    return torch.optim.SGD(
        params, lr=settings.learn_rate, momentum=settings.momentum, weight_decay=settings.weight_decay
    )


class LearningRate:
    """The learning rate at each step.

    A linear warm-up over ``warmup_steps``, then ``constant``; ``linear`` or
    ``cosine`` decay to ``final_factor`` times the base rate at ``max_steps``;
    or ``plateau``: the rate is multiplied by ``decay`` after every dev
    evaluation that does not beat the best perplexity so far by
    ``min_improvement``. The plateau state is part of the checkpoint.
    """

    def __init__(self, settings: ScheduleSettings, base: float, max_steps: int):
        self.settings = settings
        self.base = base
        self.max_steps = max_steps
        self.plateau_factor = 1.0
        self.best: Optional[float] = None

    def __call__(self, step: int) -> float:
        s = self.settings
        factor = min(1.0, (step + 1) / s.warmup_steps) if s.warmup_steps else 1.0
        if s.name in ("linear", "cosine"):
            progress = min(1.0, max(0, step - s.warmup_steps) / max(1, self.max_steps - s.warmup_steps))
            shape = 1.0 - progress if s.name == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
            factor *= s.final_factor + (1.0 - s.final_factor) * shape
        elif s.name == "plateau":
            factor *= self.plateau_factor
        return self.base * factor

    def observe(self, dev_perplexity: float) -> None:
        """Take a dev evaluation into account (plateau schedule)."""
        if self.settings.name != "plateau":
            return
        if self.best is None or dev_perplexity < self.best - self.settings.min_improvement:
            self.best = dev_perplexity if self.best is None else min(self.best, dev_perplexity)
        else:
            self.plateau_factor *= self.settings.decay
            self.best = min(self.best, dev_perplexity)

    def state_dict(self) -> dict:
        return {"plateau_factor": self.plateau_factor, "best": self.best}

    def load_state_dict(self, state: dict) -> None:
        self.plateau_factor = float(state["plateau_factor"])
        self.best = state["best"]
