"""The arithmetic the biLM runs in: "fp32", "tf32", "bf16" or, for inference, "int8"
or "int8-always".

- "fp32": float32 throughout (TF32 tensor cores off for the matrix products).
- "tf32": on a GPU, float32 tensors with the matrix products on TF32 tensor cores (10-bit
  mantissa inputs, float32 accumulation); on a CPU the same as "fp32".
- "bf16": autocast: matrix products and convolutions in bfloat16 (float32 accumulation); the
  LSTM cell state, the gates' nonlinearities, the outputs the biLM returns and the weights stay
  float32. On a CPU only where it has bfloat16 instructions (AMX or AVX-512 BF16, see
  `cpu_has_bf16`); on one without them, float32, with a warning that says so.
- "int8": inference on a CPU only: the LSTMs' input, recurrent and projection products in
  int8 (int8.py; per-column weight scales, per-row activation scales), everything else as
  "fp32", for an LSTM whose int8 products of its sizes run at least 1.5 times as fast as
  float32's on this CPU (`int8.int8_pays`, timed once per process); for another, or on a
  GPU, float32 with a warning that says so. Under gradients (training) the products stay
  float32; pretraining's settings do not offer it.
- "int8-always": "int8" whatever this CPU's speed (to reproduce int8's values on any CPU,
  as the accuracy studies do); on a GPU, float32 with the warning.

The setting holds inside the ``with`` block only: the process-wide TF32 switches are
restored when it ends. A backward pass runs outside autocast but must multiply as its
forward pass did: it runs under `tf32_switches` of the same setting.
"""

import contextlib
import warnings
from typing import Iterator, Union

import torch

from ..errors import ConfigError
from .int8 import int8_products

PRECISIONS = ("fp32", "tf32", "bf16")  # for training and inference
INT8, INT8_ALWAYS = "int8", "int8-always"
INFERENCE_PRECISIONS = PRECISIONS + (INT8, INT8_ALWAYS)


def check_precision(name: str) -> str:
    """`name` if it is one of INFERENCE_PRECISIONS, else a coded error (E104)."""
    if name not in INFERENCE_PRECISIONS:
        raise ConfigError("E104", found=name, choices=", ".join(INFERENCE_PRECISIONS))
    return name


@contextlib.contextmanager
def precision(device: Union[str, torch.device], name: str = "fp32") -> Iterator[None]:
    """Run the block in `name`'s arithmetic on `device` (see the module docstring)."""
    check_precision(name)
    device_type = torch.device(device).type
    if name in (INT8, INT8_ALWAYS):
        with _int8_or_float32(device_type, where_faster=name == INT8), tf32_switches(device, "fp32"):
            yield
        return
    if device_type == "cpu":
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "bf16" and _bf16_on_cpu()):
            yield
        return
    if device_type != "cuda":
        yield
        return
    with tf32_switches(device, name), torch.autocast("cuda", dtype=torch.bfloat16, enabled=name == "bf16"):
        yield


@contextlib.contextmanager
def tf32_switches(device: Union[str, torch.device], name: str = "fp32") -> Iterator[None]:
    """On a GPU, PyTorch's TF32 switches (matrix products and cuDNN) on for "tf32" only, for the
    block; restored after it. Nothing changes on other devices."""
    check_precision(name)
    if torch.device(device).type != "cuda":
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = name == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware: AMX tiles or
    the AVX-512 BF16 instructions (PyTorch's own detection)."""
    return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())


@contextlib.contextmanager
def _int8_or_float32(device_type: str, where_faster: bool) -> Iterator[None]:
    """int8 products for the block on a CPU (`int8_products`), else float32 with a warning."""
    if device_type != "cpu":
        _warn_float32(f'precision "int8" is for CPUs; on {device_type!r} computing in float32, as with "fp32".')
        yield
        return
    with int8_products(where_faster):
        yield


def _warn_float32(message: str) -> None:
    warnings.warn(message, stacklevel=6)


def _bf16_on_cpu() -> bool:
    if cpu_has_bf16():
        return True
    warnings.warn(
        'precision "bf16" asked for, but this CPU has no bfloat16 instructions (AMX or AVX-512 BF16): '
        'computing in float32, as with "fp32". Emulated bfloat16 would be slower, not faster.',
        stacklevel=4,
    )
    return False
