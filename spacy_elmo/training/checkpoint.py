"""The training state: what a resumed run needs to continue exactly.

One file, replaced atomically after each write, so a kill at any moment leaves
the previous one whole. It holds the model and optimiser state, the schedule's
state, every process's random-number state and the position in the data
(epoch and batches taken in it; the epoch's plan is rebuilt from the seed).
Loaded with ``weights_only=True``: tensors and plain values only, no code.
"""
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Union

import torch

from ..errors import ElmoError, Errors
from ..util import atomic_path

# 2: the schedule's state is torch's schedulers' (optim.Schedule); 1 had our own.
FORMAT_VERSION = 2


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    epoch_step: int = 0  # steps taken in the current epoch
    tokens: int = 0  # targets per direction trained on, all processes together
    elapsed: float = 0.0  # seconds spent training, evaluation included
    world_size: int = 1

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def rng_state() -> Dict[str, Any]:
    """This process's torch random state (dropout draws from it)."""
    return {
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
    }


def set_rng_state(state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["cpu"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def save_checkpoint(
    path: Union[str, Path],
    *,
    state: TrainState,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: Dict[str, Any],
    rng: List[Dict[str, Any]],
) -> None:
    payload = {
        "format": FORMAT_VERSION,
        "state": state.to_dict(),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule,
        "rng": rng,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_checkpoint(path: Union[str, Path]) -> Dict[str, Any]:
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload.get("format") != FORMAT_VERSION:
        raise ElmoError("E314", Errors.E314.format(path=path, found=payload.get("format"), expected=FORMAT_VERSION))
    payload["state"] = TrainState(**payload["state"])
    return payload
