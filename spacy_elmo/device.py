"""Checking a torch device name before anything is loaded onto it."""
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
