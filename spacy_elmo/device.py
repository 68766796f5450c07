"""Torch devices: checking a name before anything is loaded onto it, and the
copies between host arrays and a device."""
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
    tensor = tensor.detach()
    if tensor.device.type == "cpu":
        return tensor.numpy()
    if tensor.device.type != "cuda":  # another accelerator (mps, xpu…): its own copy
        return tensor.cpu().numpy()
    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    host.copy_(tensor, non_blocking=True)
    torch.cuda.current_stream(tensor.device).synchronize()
    return host.numpy()
