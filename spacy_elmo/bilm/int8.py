"""int8 matrix products for the biLM's inference on a CPU.

A product ``x (m, k) @ W (k, n)`` runs as ``torch._int_mm`` (int8 × int8 -> int32,
exact) on ``round(x / r)`` and ``round(W / s)``, then ``* r * s``:

- s (n,), one scale per output column of the weights, ``max |W[:, j]| / 127``,
  made once per version of the weights (`Int8Weight`, cached by the caller);
- r (m, 1), one scale per row of the activations, ``max |x[i]| / 127``, made at
  each call.

Each row is quantised on its own and the integer product is exact, so a row's
result does not depend on the other rows of its product: a token's values stay
independent of its batch, as in float32. On a CPU, ``torch._int_mm`` takes any
shape (torch 2.13: 1 row and up, any inner and outer size), so nothing is padded.
Its speed against float32 depends on the CPU (benchmarks/int8_speed.py measures both).

`int8_products` turns the int8 recurrence (recurrence/quantized.py) on for a
block (`BiLSTMStack.forward` reads `int8_enabled`); `int8_pays` says whether this
CPU's int8 products beat its float32 ones (`precision(device, "int8")` stays in
float32 where they do not).
"""

import contextlib
import contextvars
import time
from functools import cache
from typing import Iterator, NamedTuple, Optional, Tuple

import torch

QMAX = 127  # int8 values in [-127, 127]: symmetric, no zero point
# A row or column of zeros keeps this scale (any positive value: its integers are all 0).
_SMALLEST_MAX = 1e-30

_INT8_ON = contextvars.ContextVar("spacy_elmo_int8_products", default=False)

# `int8_pays` times one product of this shape (rows, inner, outer), float32 against int8,
# the best of PROBE_REPEATS runs of each.
PROBE_SHAPE = (32, 256, 1024)
PROBE_REPEATS = 5
INT8_MARGIN = 1.5  # int8 runs only where it is clearly faster (`int8_pays`)


class Int8Weight(NamedTuple):
    """Weights (d, k, n) quantised per output column: values (d, n, k) int8, read
    as (k, n) through a transposed view (the layout `torch._int_mm` is faster
    with); scale (d, 1, n) float32."""

    values: torch.Tensor
    scale: torch.Tensor

    @property
    def out_features(self) -> int:
        return self.values.shape[1]


def quantize_weight(weight: torch.Tensor) -> Int8Weight:
    """`weight` (d, k, n) float32 as int8 with one scale per output column."""
    scale = weight.abs().amax(dim=1, keepdim=True).clamp_min(_SMALLEST_MAX) / QMAX  # (d, 1, n)
    values = torch.round(weight / scale).to(torch.int8)
    return Int8Weight(values.transpose(1, 2).contiguous(), scale)


def quantize_rows(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """`x` (..., k) float32 as int8 with one scale per row: (values (..., k) int8,
    scale (..., 1) float32)."""
    largest = x.abs().amax(dim=-1, keepdim=True).clamp_min(_SMALLEST_MAX)
    return torch.round(x * (QMAX / largest)).to(torch.int8), largest / QMAX


def int8_baddbmm(bias: Optional[torch.Tensor], x: torch.Tensor, weight: Int8Weight) -> torch.Tensor:
    """``bias + x @ W`` for x (d, m, k) float32 and W (d, k, n) as `Int8Weight`,
    the products in int8: (d, m, n) float32. bias: broadcastable to (d, m, n), or None."""
    d, m, _ = x.shape
    values, row_scale = quantize_rows(x)
    out = x.new_empty(d, m, weight.out_features)
    for i in range(d):
        out[i].copy_(torch._int_mm(values[i], weight.values[i].t()))
    out.mul_(row_scale).mul_(weight.scale)
    if bias is not None:
        out.add_(bias)
    return out


@contextlib.contextmanager
def int8_products() -> Iterator[None]:
    """Run the biLM's LSTMs with int8 products inside the block, on a CPU, where
    they run without gradients from the zero state (a stateful biLM, training and
    other devices stay float32), whatever this CPU's speed (`precision(device,
    "int8")` checks `int8_pays` first)."""
    token = _INT8_ON.set(True)
    try:
        yield
    finally:
        _INT8_ON.reset(token)


def int8_enabled() -> bool:
    """Whether the current block asked for int8 products (`int8_products`)."""
    return _INT8_ON.get()


@cache
def int8_pays() -> bool:
    """Whether an int8 product (quantising its rows included) runs at least
    INT8_MARGIN times as fast as the float32 one on this CPU, timed once per
    process, at the thread count of its first call, on a product of
    PROBE_SHAPE; False where ``torch._int_mm`` has no CPU kernel. The margin
    keeps a CPU near the line from choosing one arithmetic in one process and
    the other in the next."""
    rows, inner, outer = PROBE_SHAPE
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, inner, generator=generator)
    w = torch.randn(1, inner, outer, generator=generator)
    quantized = quantize_weight(w)
    try:
        int8_seconds = _best_time(lambda: int8_baddbmm(None, x.unsqueeze(0), quantized))
    except RuntimeError:
        return False
    return int8_seconds * INT8_MARGIN < _best_time(lambda: torch.mm(x, w[0]))


def _best_time(run) -> float:
    run()
    best = float("inf")
    for _ in range(PROBE_REPEATS):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best
