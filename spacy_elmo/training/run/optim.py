"""The optimiser and the learning-rate schedule, both torch's own."""
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

import torch
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, LRScheduler, ReduceLROnPlateau, SequentialLR

from ...errors import ElmoError, Errors
from .config import OptimizerSettings, ScheduleSettings


def make_optimizer(params: Iterable[torch.nn.Parameter], settings: OptimizerSettings) -> torch.optim.Optimizer:
    # Three named torch optimisers with their settings mapped by hand, rather than
    # getattr(torch.optim, name)(**settings): the config's names (beta1/beta2,
    # bilm-tf's Adagrad accumulator) then stay the same whatever torch renames.
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


class Schedule:
    """The learning rate of `optimizer`, set by torch's schedulers.

    A linear warm-up over ``warmup_steps`` (``LinearLR``), then ``constant``;
    ``linear`` (``LinearLR``) or ``cosine`` (``CosineAnnealingLR``) decay to
    ``final_factor`` times the base rate at ``max_steps``, joined to the
    warm-up by ``SequentialLR``; or ``plateau`` (``ReduceLROnPlateau``): the
    rate is multiplied by ``decay`` after every dev evaluation that does not
    beat the best perplexity so far by ``min_improvement``.

    Call `step()` after every optimiser step and `observe()` after every dev
    evaluation. The schedulers' state is part of the checkpoint; a resumed run
    continues it, so the settings it was built from may not change (E315).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, settings: ScheduleSettings, learn_rate: float, max_steps: int):
        self.optimizer = optimizer
        self.built_for = _built_for(settings, learn_rate, max_steps)
        warmup = settings.warmup_steps
        phases: List[LRScheduler] = []
        if warmup:  # step s runs at (s + 1) / warmup of the rate
            phases.append(LinearLR(optimizer, start_factor=1.0 / warmup, end_factor=1.0, total_iters=warmup - 1))
        decay_steps = max(1, max_steps - warmup)
        if settings.name == "linear":
            phases.append(LinearLR(optimizer, start_factor=1.0, end_factor=settings.final_factor, total_iters=decay_steps))
        elif settings.name == "cosine":
            phases.append(CosineAnnealingLR(optimizer, T_max=decay_steps, eta_min=settings.final_factor * learn_rate))
        self.per_step: Optional[LRScheduler] = (
            SequentialLR(optimizer, phases, milestones=[warmup]) if len(phases) == 2 else (phases[0] if phases else None)
        )
        self.on_plateau: Optional[ReduceLROnPlateau] = None
        if settings.name == "plateau" and settings.decay < 1:
            self.on_plateau = ReduceLROnPlateau(
                optimizer, mode="min", factor=settings.decay, patience=0,
                threshold=settings.min_improvement, threshold_mode="abs", eps=0.0,
            )

    @property
    def lr(self) -> float:
        """The rate the next optimiser step uses."""
        return float(self.optimizer.param_groups[0]["lr"])

    def step(self) -> None:
        if self.per_step is not None:
            self.per_step.step()

    def observe(self, dev_perplexity: float) -> None:
        """Take a dev evaluation into account (plateau schedule)."""
        if self.on_plateau is not None:
            self.on_plateau.step(dev_perplexity)

    def state_dict(self) -> Dict[str, Any]:
        return {
            "built_for": dict(self.built_for),
            "per_step": self.per_step.state_dict() if self.per_step is not None else None,
            "on_plateau": self.on_plateau.state_dict() if self.on_plateau is not None else None,
        }

    def load_state_dict(self, state: Dict[str, Any], path: Union[str, Path] = "<checkpoint>") -> None:
        """Continue the saved schedule; E315 if it was built from other settings."""
        saved = state["built_for"]
        if saved != self.built_for:
            changed = sorted(k for k in set(saved) | set(self.built_for) if saved.get(k) != self.built_for.get(k))
            raise ElmoError("E315", Errors.E315.format(
                path=path,
                saved=", ".join(f"{k} = {saved.get(k)!r}" for k in changed),
                found=", ".join(f"{k} = {self.built_for.get(k)!r}" for k in changed),
            ))
        if self.per_step is not None:
            self.per_step.load_state_dict(state["per_step"])
        if self.on_plateau is not None:
            self.on_plateau.load_state_dict(state["on_plateau"])


def _built_for(settings: ScheduleSettings, learn_rate: float, max_steps: int) -> Dict[str, Any]:
    """The settings a schedule's saved state depends on."""
    out: Dict[str, Any] = {"schedule.name": settings.name, "schedule.warmup_steps": settings.warmup_steps,
                           "optimizer.learn_rate": learn_rate}
    if settings.name in ("linear", "cosine"):  # the decay ends at max_steps
        out.update({"schedule.final_factor": settings.final_factor, "max_steps": max_steps})
    elif settings.name == "plateau":
        out.update({"schedule.decay": settings.decay, "schedule.min_improvement": settings.min_improvement})
    return out
