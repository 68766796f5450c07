"""Running on one process or many (``torchrun``, DistributedDataParallel):
pretraining's processes and `embed`'s share this.

``torchrun`` sets RANK, WORLD_SIZE and LOCAL_RANK (and MASTER_ADDR and
MASTER_PORT, where the processes meet); without WORLD_SIZE this is a single
process and every collective below is a no-op. The backend is NCCL when each
process has a GPU, gloo on the CPU.
"""

import os
from dataclasses import dataclass
from typing import Any, List, Mapping

import torch
import torch.distributed as dist

from .errors import ConfigError

# What a process of several needs to join the others (torch's env:// rendezvous).
_RENDEZVOUS = ("RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        """The one process that writes checkpoints, logs and the export."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @classmethod
    def from_env(cls, device: str = "auto") -> "Distributed":
        """This process's place among those ``torchrun`` started, from the
        environment; E545 for a variable that is not a number in range, or
        one that a process of several needs and lacks (checked before
        anything is loaded: joining the others comes later)."""
        env = os.environ
        world_size = _whole_number(env, "WORLD_SIZE", 1, lowest=1)
        if world_size > 1:
            for name in _RENDEZVOUS:
                if not env.get(name):
                    raise ConfigError(
                        "E545", name=name, found="not set", expected=f"set, since WORLD_SIZE is {world_size}"
                    )
        rank = _whole_number(env, "RANK", 0, lowest=0, below=world_size)
        local_rank = _whole_number(env, "LOCAL_RANK", 0, lowest=0)
        if device == "auto":
            device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
        elif device == "cuda":
            device = f"cuda:{local_rank}"
        return cls(rank, world_size, local_rank, torch.device(device))

    def start(self) -> None:
        if not self.enabled or dist.is_initialized():
            return
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")

    def stop(self, clean: bool = True) -> None:
        """Leave the process group. After a clean end (or an error every
        process raised together) wait for all first: gloo torn down while a
        peer is still in a collective can abort the process."""
        if not self.enabled or not dist.is_initialized():
            return
        if clean:
            dist.barrier()
        dist.destroy_process_group()

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """The sum of `values` over all processes (a new tensor)."""
        values = values.detach().clone()
        if self.enabled:
            on_device = values.to(self.device)
            dist.all_reduce(on_device)
            values = on_device.to(values.device)
        return values

    def gather(self, obj: Any) -> List[Any]:
        """Every process's `obj`, in rank order."""
        if not self.enabled:
            return [obj]
        out: List[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out


def _whole_number(env: Mapping[str, str], name: str, default: int, *, lowest: int, below: int = 0) -> int:
    """The variable `name` of `env` as a whole number from `lowest` (and under
    `below`, when that is given), or `default` where it is not set; E545 otherwise."""
    text = env.get(name, "").strip()
    if not text:
        return default
    expected = f"a whole number from {lowest}" + (f" to {below - 1} (WORLD_SIZE is {below})" if below else " up")
    try:
        value = int(text)
    except ValueError:
        raise ConfigError("E545", name=name, found=repr(text), expected=expected) from None
    if value < lowest or (below and value >= below):
        raise ConfigError("E545", name=name, found=repr(text), expected=expected)
    return value
