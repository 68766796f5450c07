"""The training state: what a resumed run needs to continue exactly.

One file, replaced atomically after each write, so a kill at any moment leaves
the previous one whole. It holds the model and optimiser state, the schedule's
state, every process's random-number state and the position in the data
(epoch and batches taken in it; the epoch's plan is rebuilt from the seed).
Loaded with ``weights_only=True``: tensors and plain values only, no code;
a file that torch cannot read, or that does not hold what `_Payload` lists,
is damaged (E317). It also keeps the digest of the run's vocabulary, so that
a vocab.txt changed beside it is found out.
"""
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import torch
from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError

from ...errors import DamagedFileError
from ...util import atomic_path
from ...disk import RUN_FILE, writing

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


class _Payload(BaseModel):
    """What a checkpoint holds (after its format is checked)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    format: StrictInt
    state: TrainState
    model: Dict[str, torch.Tensor]
    optimizer: Dict[str, Any]
    schedule: Dict[str, Any]
    rng: List[Dict[str, Any]]
    vocab_sha256: Optional[str] = None  # absent in checkpoints of earlier versions


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
    vocab_sha256: Optional[str] = None,
) -> None:
    payload = {
        "format": FORMAT_VERSION,
        "state": state.to_dict(),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule,
        "rng": rng,
        "vocab_sha256": vocab_sha256,
    }
    with writing(path, any_failure=True, code=RUN_FILE), atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_checkpoint(path: Union[str, Path]) -> Dict[str, Any]:
    """The checkpoint's payload, its state a TrainState.

    E314 for another format, E317 for a file that is not a whole checkpoint
    (cut short, empty, overwritten) or no file at all (a folder); an error
    opening it is raised as it is.
    """
    if Path(path).is_dir():
        raise damaged_checkpoint(path, "it is a folder, not a file")
    with open(path, "rb") as f:
        try:
            payload = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises many kinds on a damaged file (EOFError, RuntimeError, KeyError...)
            size = os.fstat(f.fileno()).st_size
            reason = "it is empty" if size == 0 else f"torch cannot read its {size:,} bytes ({type(err).__name__})"
            raise damaged_checkpoint(path, reason) from err
    if not isinstance(payload, dict):
        raise damaged_checkpoint(path, f"it holds a {type(payload).__name__}, not a checkpoint")
    if payload.get("format") != FORMAT_VERSION:
        raise DamagedFileError("E314", path=path, found=payload.get("format"), expected=FORMAT_VERSION)
    try:
        checked = _Payload.model_validate(payload)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()[:3])
        raise damaged_checkpoint(path, problems) from None
    return {**payload, "state": checked.state}


def damaged_checkpoint(path: Union[str, Path], reason: str) -> DamagedFileError:
    return DamagedFileError(
        "E317", what="checkpoint", path=path, reason=reason,
        fix="It is the run's only checkpoint (written whole or not at all, so something outside the run "
            "changed it). Put back a copy of it if you have one; or remove it and run again with --resume "
            "to train this run from step 0 in the same folder; or start a new run in another folder "
            "(with --init-from OUTPUT_DIR/model if the run exported a model).",
    )
