"""The optimiser and the learning-rate schedule, both torch's own, each a
registered function of its config section (see training/registry.py).

``[training.optimizer] @pretrain_optimizers = "spacy-elmo.Adam.v1"`` names a
function of ``registry.pretrain_optimizers``; the section's other settings are
its arguments, and it returns an `OptimizerFactory`: the model's parameters ->
a torch optimiser. ``[training.schedule] @pretrain_schedules =
"spacy-elmo.linear.v1"`` names one of ``registry.pretrain_schedules``; it
returns a `ScheduleFactory`: the optimiser -> a `Schedule` (whose base rate is
the optimiser's). The bounds in the arguments' annotations are checked with
the config (run/config.py). A schedule's saved state records its kind
("linear"), not its registered name.
"""
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Callable, Dict, Iterable, List, Optional, Union

import torch
from pydantic import AfterValidator, Field
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, LRScheduler, ReduceLROnPlateau, SequentialLR

from ...errors import ConfigError
from ..registry import registry

OptimizerFactory = Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]
# (optimizer, steps after the warm-up) -> the scheduler of the decay.
Decay = Callable[[torch.optim.Optimizer, int], LRScheduler]
LearnRate = Annotated[float, Field(gt=0)]


# Three named torch optimisers with their settings mapped by hand, rather than
# getattr(torch.optim, name)(**settings): the config's names (beta1/beta2,
# bilm-tf's Adagrad accumulator) then stay the same whatever torch renames.
@registry.pretrain_optimizers("spacy-elmo.Adam.v1")
def adam(
    learn_rate: LearnRate = 0.001, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
    weight_decay: float = 0.0,
) -> OptimizerFactory:
    return partial(torch.optim.Adam, lr=learn_rate, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)


@registry.pretrain_optimizers("spacy-elmo.SGD.v1")
def sgd(learn_rate: LearnRate = 0.001, momentum: float = 0.0, weight_decay: float = 0.0) -> OptimizerFactory:
    return partial(torch.optim.SGD, lr=learn_rate, momentum=momentum, weight_decay=weight_decay)


@registry.pretrain_optimizers("spacy-elmo.Adagrad.v1")
def adagrad(learn_rate: LearnRate = 0.001, weight_decay: float = 0.0) -> OptimizerFactory:
    """bilm-tf's choice, with its initial accumulator of 1."""
    return partial(torch.optim.Adagrad, lr=learn_rate, initial_accumulator_value=1.0, weight_decay=weight_decay)


class Schedule:
    """The learning rate of `optimizer`, set by torch's schedulers.

    An optional linear warm-up over ``warmup_steps`` (``LinearLR``), then an
    optional `decay` over the steps left to ``max_steps``, joined to the
    warm-up by ``SequentialLR``; and an optional ``ReduceLROnPlateau`` that
    `observe()` steps after every dev evaluation. The registered schedules
    below choose these pieces; the base rate is the optimiser's.

    Call `step()` after every optimiser step and `observe()` after every dev
    evaluation. The schedulers' state is part of the checkpoint; a resumed run
    continues it, so the settings it was built from (`built_for`, named as in
    the config) may not change (E315).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        built_for: Dict[str, Any],
        *,
        warmup_steps: int = 0,
        decay: Optional[Decay] = None,
        max_steps: int = 0,
        on_plateau: Optional[Callable[[torch.optim.Optimizer], ReduceLROnPlateau]] = None,
    ):
        self.optimizer = optimizer
        self.built_for = dict(built_for)
        phases: List[LRScheduler] = []
        if warmup_steps:  # step s runs at (s + 1) / warmup of the rate
            phases.append(LinearLR(optimizer, start_factor=1.0 / warmup_steps, end_factor=1.0,
                                   total_iters=warmup_steps - 1))
        if decay is not None:
            phases.append(decay(optimizer, max(1, max_steps - warmup_steps)))
        self.per_step: Optional[LRScheduler] = (
            SequentialLR(optimizer, phases, milestones=[warmup_steps]) if len(phases) == 2
            else (phases[0] if phases else None)
        )
        self.on_plateau: Optional[ReduceLROnPlateau] = on_plateau(optimizer) if on_plateau is not None else None

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
            raise ConfigError(
                "E315", path=path,
                saved=", ".join(f"{k} = {saved.get(k)!r}" for k in changed),
                found=", ".join(f"{k} = {self.built_for.get(k)!r}" for k in changed),
            )
        if self.per_step is not None:
            self.per_step.load_state_dict(state["per_step"])
        if self.on_plateau is not None:
            self.on_plateau.load_state_dict(state["on_plateau"])


ScheduleFactory = Callable[[torch.optim.Optimizer], Schedule]


def _base_rate(optimizer: torch.optim.Optimizer) -> float:
    return float(optimizer.defaults["lr"])


def _built_for(name: str, warmup_steps: int, optimizer: torch.optim.Optimizer, **more: Any) -> Dict[str, Any]:
    """The settings a schedule's saved state depends on, named as in the config."""
    return {"schedule.name": name, "schedule.warmup_steps": warmup_steps, "optimizer.learn_rate": _base_rate(optimizer),
            **more}


def _an_end(max_steps: int) -> int:
    """A decay's last step, once it is one (0 is [training]'s "no limit", which a decay cannot end at)."""
    if max_steps < 1:
        raise ValueError("must be above 0: the decay ends at this step "
                         "(max_steps = ${training.max_steps} ends it with the run)")
    return max_steps


WarmupSteps = Annotated[int, Field(ge=0)]
FinalFactor = Annotated[float, Field(ge=0, le=1)]
# The step a decay ends at: [training]'s max_steps, which a config passes on as ${training.max_steps}.
EndStep = Annotated[int, AfterValidator(_an_end)]


@registry.pretrain_schedules("spacy-elmo.constant.v1")
def constant(warmup_steps: WarmupSteps = 0) -> ScheduleFactory:
    """The base rate, after the warm-up.

    warmup_steps: the steps of a linear warm-up (step s runs at (s + 1) / warmup_steps of the base rate).
    """

    def build(optimizer: torch.optim.Optimizer) -> Schedule:
        return Schedule(optimizer, _built_for("constant", warmup_steps, optimizer), warmup_steps=warmup_steps)

    return build


@registry.pretrain_schedules("spacy-elmo.linear.v1")
def linear(warmup_steps: WarmupSteps = 0, final_factor: FinalFactor = 0.0, *, max_steps: EndStep) -> ScheduleFactory:
    """After the warm-up, a linear decay (``LinearLR``) to `final_factor` times
    the base rate at `max_steps`.

    final_factor: the rate at `max_steps`, as a fraction of the base rate.
    max_steps: the step the decay ends at; ``max_steps = ${training.max_steps}`` ends it with the run.
    """

    def build(optimizer: torch.optim.Optimizer) -> Schedule:
        return Schedule(
            optimizer, _built_for("linear", warmup_steps, optimizer, **{"schedule.final_factor": final_factor,
                                                                         "max_steps": max_steps}),
            warmup_steps=warmup_steps, max_steps=max_steps,
            decay=lambda opt, steps: LinearLR(opt, start_factor=1.0, end_factor=final_factor, total_iters=steps),
        )

    return build


@registry.pretrain_schedules("spacy-elmo.cosine.v1")
def cosine(warmup_steps: WarmupSteps = 0, final_factor: FinalFactor = 0.0, *, max_steps: EndStep) -> ScheduleFactory:
    """After the warm-up, a cosine decay (``CosineAnnealingLR``) to `final_factor`
    times the base rate at `max_steps`.

    final_factor: the rate at `max_steps`, as a fraction of the base rate.
    max_steps: the step the decay ends at; ``max_steps = ${training.max_steps}`` ends it with the run.
    """

    def build(optimizer: torch.optim.Optimizer) -> Schedule:
        return Schedule(
            optimizer, _built_for("cosine", warmup_steps, optimizer, **{"schedule.final_factor": final_factor,
                                                                         "max_steps": max_steps}),
            warmup_steps=warmup_steps, max_steps=max_steps,
            decay=lambda opt, steps: CosineAnnealingLR(opt, T_max=steps, eta_min=final_factor * _base_rate(opt)),
        )

    return build


@registry.pretrain_schedules("spacy-elmo.plateau.v1")
def plateau(
    warmup_steps: WarmupSteps = 0,
    decay: Annotated[float, Field(gt=0, le=1)] = 0.5,
    min_improvement: Annotated[float, Field(ge=0)] = 0.0,
) -> ScheduleFactory:
    """After the warm-up, the rate times `decay` after every dev evaluation that
    does not beat the best perplexity so far by `min_improvement` (``ReduceLROnPlateau``).

    decay: what the rate is multiplied by; 1 keeps it.
    min_improvement: a dev perplexity drop smaller than this counts as none.
    """

    def build(optimizer: torch.optim.Optimizer) -> Schedule:
        return Schedule(
            optimizer, _built_for("plateau", warmup_steps, optimizer, **{"schedule.decay": decay,
                                                                          "schedule.min_improvement": min_improvement}),
            warmup_steps=warmup_steps,
            on_plateau=None if decay >= 1 else lambda opt: ReduceLROnPlateau(
                opt, mode="min", factor=decay, patience=0, threshold=min_improvement, threshold_mode="abs", eps=0.0,
            ),
        )

    return build
