"""Torch devices: checking a name before anything is loaded onto it, and the
copies between host arrays and a device."""

from functools import cache
from typing import Iterable, Iterator, Optional

import numpy
import torch

from .errors import InputError


def check_device(name: str) -> torch.device:
    """The torch device `name` ("cpu", "cuda", "cuda:1" …), once a tensor could
    be made on it; a coded error (E509) for a name PyTorch does not know or a
    device this machine does not have."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError, ValueError) as err:
        raise _unusable(name, f"PyTorch does not know it ({err})") from err
    if device.type == "meta":
        raise _unusable(name, "it holds no data")
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as err:  # AssertionError: a build without CUDA
        raise _unusable(name, str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from err
    return device


def _unusable(name: str, reason: str) -> InputError:
    return InputError("E509", found=name, reason=reason, n_gpus=torch.cuda.device_count())


def to_device(array: numpy.ndarray, device: torch.device) -> torch.Tensor:
    """A host array as a tensor on `device`. To a CUDA device through
    page-locked memory and without waiting: a copy from ordinary (pageable)
    memory would first wait for everything queued on the GPU, so the host could
    not prepare the next batch while the GPU works on this one. On the CPU the
    array's own memory where it is contiguous (else a contiguous copy)."""
    tensor = torch.from_numpy(numpy.ascontiguousarray(array))
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def to_host(tensor: torch.Tensor) -> numpy.ndarray:
    """`tensor` as a NumPy array on the host. From a CUDA device one copy into
    page-locked memory (several times faster than into pageable memory) and one
    wait for it; the array keeps that memory until it is freed, so a caller
    that holds on to many results should copy out what it keeps."""
    return _HostCopy.start(tensor).array()


def copied_to_host(tensors: Iterable[torch.Tensor]) -> Iterator[numpy.ndarray]:
    """Each of `tensors` as a NumPy array on the host (as `to_host` makes it),
    in order. From a CUDA device one behind: a tensor's copy starts as it
    comes, on a stream of its own, and its array is handed over once the next
    tensor has been asked for, so the host prepares (and queues) the next
    batch and then uses this one while the GPU computes; the host waits only
    for the copy it hands over. On the CPU each array as its tensor comes."""
    pending: Optional[_HostCopy] = None
    for tensor in tensors:
        copy = _HostCopy.start(tensor)
        if pending is not None:
            yield pending.array()
        pending = copy
        if copy.done is None:  # nothing to wait for
            yield pending.array()
            pending = None
    if pending is not None:
        yield pending.array()


class _HostCopy:
    """A tensor's copy to the host: started, and waited for when its array is
    asked for. From a CUDA device into page-locked memory on the device's copy
    stream, after the work queued for the tensor; `done` is that copy's event
    (None when the array is there already)."""

    def __init__(self, host: torch.Tensor, done: Optional[torch.cuda.Event] = None):
        self.host = host
        self.done = done

    @classmethod
    def start(cls, tensor: torch.Tensor) -> "_HostCopy":
        tensor = tensor.detach()
        if tensor.device.type == "cpu":
            return cls(tensor)
        if tensor.device.type != "cuda":  # another accelerator (mps, xpu…): its own copy
            return cls(tensor.cpu())
        stream = _copy_stream(tensor.device)
        stream.wait_stream(torch.cuda.current_stream(tensor.device))
        host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        with torch.cuda.stream(stream):
            host.copy_(tensor, non_blocking=True)
            # The tensor's memory is not handed to another tensor until the copy is done.
            tensor.record_stream(stream)
            done = torch.cuda.Event()
            done.record(stream)
        return cls(host, done)

    def array(self) -> numpy.ndarray:
        if self.done is not None:
            self.done.synchronize()
        return self.host.numpy()


@cache
def _copy_stream(device: torch.device) -> torch.cuda.Stream:
    """The stream that copies results from `device` to the host, one per
    device, so that a copy runs beside the next batch's computation."""
    return torch.cuda.Stream(device)
