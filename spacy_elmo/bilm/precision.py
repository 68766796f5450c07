"""The arithmetic the biLM runs in on a GPU: "fp32", "tf32" or "bf16".

- "fp32": float32 throughout (TF32 tensor cores off for the matrix products).
- "tf32": float32 tensors, matrix products on TF32 tensor cores (10-bit mantissa inputs,
  float32 accumulation).
- "bf16": autocast: matrix products and convolutions in bfloat16; the LSTM cell state, the
  outputs the biLM returns and the weights stay float32.

On the CPU every setting computes in float32. The setting holds inside the ``with`` block
only: the process-wide TF32 switches are restored when it ends.
"""
import contextlib
from typing import Iterator, Union

import torch

from ..errors import ConfigError

PRECISIONS = ("fp32", "tf32", "bf16")


def check_precision(name: str) -> str:
    """`name` if it is one of PRECISIONS, else a coded error (E104)."""
    if name not in PRECISIONS:
        raise ConfigError("E104", found=name, choices=", ".join(PRECISIONS))
    return name


@contextlib.contextmanager
def precision(device: Union[str, torch.device], name: str = "fp32") -> Iterator[None]:
    """Run the block in `name`'s arithmetic on `device` (see the module docstring)."""
    check_precision(name)
    device_type = torch.device(device).type
    if device_type != "cuda":
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    tf32 = name == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
    try:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=name == "bf16"):
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
