"""Running on one process or many (``torchrun``, DistributedDataParallel):
pretraining's processes and `embed`'s share this.

``torchrun`` sets RANK, WORLD_SIZE and LOCAL_RANK; without them this is a
single process and every collective below is a no-op. The backend is NCCL
when each process has a GPU, gloo on the CPU.
"""
import os
from dataclasses import dataclass
from typing import Any, List

import torch
import torch.distributed as dist


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
        rank = int(os.environ.get("RANK", 0))
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
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
