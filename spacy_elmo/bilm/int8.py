"""int8 matrix products for the biLM's inference on a CPU.

A product ``x (m, k) @ W (k, n)`` runs on integers, ``round(x / r) @ round(W / s)``
(exact, in 32 bits), then ``* r * s``:

- s (n,), one scale per output column of the weights, ``max |W[:, j]| / WEIGHT_QMAX``
  (integers in [-127, 127]), made once per version of the weights (`Int8Weight`, cached
  by the caller);
- r (m, 1), one scale per row of the activations, ``max |x[i]| / QMAX`` (integers in
  [-63, 63]), made at each call.

Each row is quantised on its own and the integer product is exact, so a row's
result does not depend on the other rows of its product: a token's values stay
independent of its batch, as in float32.

Two kernels compute the same integer product:

- oneDNN's (``torch.ops.onednn.qlinear_pointwise``, the int8 linear that PyTorch's
  x86 quantisation lowers to), on weights packed once (`Int8Weight.packed`) and rows
  as uint8 with a zero point. It runs on AVX2 as well as on VNNI and AMX. Without
  VNNI it adds pairs of uint8 × int8 products in 16 bits, which saturate past
  32,767: the rows are therefore quantised to 7 bits (QMAX = 63, stored as uint8 in
  [1, 127] with a zero point of 64; 2 × 127 × 127 = 32,258 fits), on every CPU and
  for both kernels, so that every kernel gives the same integers. (7-bit rows with
  8-bit weights measured closer to float32 than 8-bit rows with 7-bit weights:
  benchmarks/int8_accuracy.py.)
- ``torch._int_mm`` (int8 × int8 -> int32), where PyTorch has no oneDNN.

`int8_products` turns the int8 recurrence (recurrence/quantized.py) on for a
block; `int8_runs` says whether an LSTM of given sizes runs it: always, or only
where this CPU's int8 products of those sizes beat float32's (`int8_pays`;
`precision(device, "int8")` asks for that, "int8-always" for always).
benchmarks/int8_speed.py measures both.
"""

import contextlib
import contextvars
import time
import warnings
from functools import cache
from typing import Iterator, NamedTuple, Optional, Tuple

import torch

QMAX = 63  # activations in [-63, 63], symmetric: see the module's docstring
WEIGHT_QMAX = 127  # weights in [-127, 127], symmetric
ZERO_POINT = 64  # oneDNN's rows are uint8: round(x / r) + 64, in [1, 127]
# A row or column of zeros keeps this scale (any positive value: its integers are all 0).
_SMALLEST_MAX = 1e-30

# Inside `int8_products`: ALWAYS, or WHERE_FASTER (`int8_runs` checks `int8_pays` first).
ALWAYS, WHERE_FASTER = "always", "where faster"
_INT8_MODE: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("spacy_elmo_int8_products", default=None)

# `int8_pays` times a recurrence step's products of (PROBE_ROWS, inner) @ (inner, outer)
# for both directions, float32 against int8, the best of PROBE_REPEATS runs of each.
PROBE_ROWS = 32
PROBE_REPEATS = 5
INT8_MARGIN = 1.5  # int8 runs only where it is clearly faster (`int8_pays`)

# oneDNN makes the products of at most this many rows at a time. Its result is a new tensor (it has
# no ``out=``), and for a block of the input products (512 rows by 4 * 4,096 columns in the original
# model) that would be a 32 MiB temporary per direction, which the allocator keeps once it is freed.
# In chunks, and with a block's input products in one reused buffer (recurrence/quantized.py), the
# original's peak memory at batch 128 is 1.08 times float32's, against 1.20 before (benchmarks/README.md,
# C12). The values do not depend on the chunks: each row is quantised on its own and its integer
# product is exact.
ROWS_PER_CALL = 128

# A product's (inner, outer) sizes.
Shape = Tuple[int, int]


class Int8Weight(NamedTuple):
    """Weights (d, k, n) quantised per output column: scale (d, 1, n) float32, and
    the integers either packed by oneDNN, one per direction (`packed`), or as
    (d, n, k) int8 read as (k, n) through a transposed view (`values`, for
    ``torch._int_mm``); the other is None."""

    scale: torch.Tensor
    packed: Optional[Tuple[torch.Tensor, ...]]
    values: Optional[torch.Tensor]

    @property
    def out_features(self) -> int:
        return self.scale.shape[-1]


def onednn_available() -> bool:
    """Whether this PyTorch has oneDNN's int8 linear (CPU builds for x86 do)."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.onednn, "qlinear_pointwise")


def quantize_weight(weight: torch.Tensor, pack: Optional[bool] = None) -> Int8Weight:
    """`weight` (d, k, n) float32 as integers in [-WEIGHT_QMAX, WEIGHT_QMAX] with one
    scale per output column, packed for oneDNN where it is available (or as `pack` says)."""
    scale = weight.abs().amax(dim=1, keepdim=True).clamp_min(_SMALLEST_MAX) / WEIGHT_QMAX  # (d, 1, n)
    values = weight.div(scale).round_().to(torch.int8).transpose(1, 2).contiguous()  # (d, n, k)
    if pack is None:
        pack = onednn_available()
    if pack:
        return Int8Weight(scale, tuple(torch.ops.onednn.qlinear_prepack(v, None) for v in values), None)
    return Int8Weight(scale, None, values)


def quantize_rows(x: torch.Tensor, zero_point: int = 0, dtype: torch.dtype = torch.int8):
    """`x` (..., k) float32 as integers in [-QMAX, QMAX] with one scale per row, plus
    `zero_point`, as `dtype`: (values (..., k), scale (..., 1) float32)."""
    largest = x.abs().amax(dim=-1, keepdim=True).clamp_min(_SMALLEST_MAX)
    values = torch.round(x * (QMAX / largest))
    if zero_point:
        values.add_(zero_point)
    return values.to(dtype), largest / QMAX


def int8_baddbmm(
    bias: Optional[torch.Tensor], x: torch.Tensor, weight: Int8Weight, out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """``bias + x @ W`` for x (d, m, k) float32 and W (d, k, n) as `Int8Weight`,
    the products in int8: (d, m, n) float32, written to `out` where it is given.
    bias: broadcastable to (d, m, n), or None."""
    if out is None:
        out = x.new_empty(x.shape[0], x.shape[1], weight.out_features)
    if weight.packed is not None:
        bias = None if bias is None else bias.expand_as(out)
        for start in range(0, x.shape[1], ROWS_PER_CALL):
            rows = slice(start, start + ROWS_PER_CALL)
            values, row_scale = quantize_rows(x[:, rows], ZERO_POINT, torch.uint8)
            for i, (packed, scale) in enumerate(zip(weight.packed, weight.scale)):
                product = _onednn_mm(values[i], packed, scale)  # scaled by the columns' scales
                if bias is None:
                    torch.mul(product, row_scale[i], out=out[i, rows])
                else:
                    torch.addcmul(bias[i, rows], product, row_scale[i], out=out[i, rows])
        return out
    values, row_scale = quantize_rows(x)
    for i in range(x.shape[0]):
        out[i].copy_(torch._int_mm(values[i], weight.values[i].t()))
    out.mul_(row_scale).mul_(weight.scale)
    if bias is not None:
        out.add_(bias)
    return out


def _onednn_mm(rows: torch.Tensor, packed: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``(rows - ZERO_POINT) @ values * scale`` for rows (m, k) uint8 and one
    direction's packed values and scale (1, n): (m, n) float32."""
    column_scale = scale.view(-1)
    no_zero_points = _zero_points(column_scale.numel())
    return torch.ops.onednn.qlinear_pointwise(
        rows, 1.0, ZERO_POINT, packed, column_scale, no_zero_points, None, 1.0, 0, torch.float32, "none", [], ""
    )


@cache
def _zero_points(n: int) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.int64)


@contextlib.contextmanager
def int8_products(where_faster: bool = False) -> Iterator[None]:
    """Run the biLM's LSTMs with int8 products inside the block, on a CPU, where
    they run without gradients from the zero state (a stateful biLM, training and
    other devices stay float32): whatever this CPU's speed, or, `where_faster`,
    for an LSTM whose products `int8_pays` (`int8_runs`)."""
    token = _INT8_MODE.set(WHERE_FASTER if where_faster else ALWAYS)
    try:
        yield
    finally:
        _INT8_MODE.reset(token)


def int8_runs(shapes: Tuple[Shape, ...]) -> bool:
    """Whether an LSTM whose step multiplies by `shapes` runs in int8 here: inside
    `int8_products()`, yes; inside ``int8_products(where_faster=True)`` where
    `int8_pays` (else a warning that says so, and no); outside, no."""
    mode = _INT8_MODE.get()
    if mode is None:
        return False
    if mode == ALWAYS or int8_pays(shapes, torch.get_num_threads()):
        return True
    sizes = ", ".join(f"{inner} -> {outer}" for inner, outer in shapes)
    warnings.warn(
        f'precision "int8" asked for, but on this CPU the int8 products of this LSTM ({sizes}) do not run '
        f'{INT8_MARGIN} times as fast as float32 ones: computing in float32, as with "fp32" '
        f'("int8-always" computes in int8 whatever the speed).',
        stacklevel=2,
    )
    return False


@cache
def int8_pays(shapes: Tuple[Shape, ...], threads: int) -> bool:
    """Whether the int8 products of `shapes` (quantising their rows included)
    run at least INT8_MARGIN times as fast as float32 ones on this CPU at
    `threads` threads, timed once per process on random values, PROBE_ROWS rows
    for both directions; False where no int8 kernel runs on this CPU. The margin
    keeps a CPU near the line from choosing one arithmetic in one process and
    the other in the next."""
    generator = torch.Generator().manual_seed(0)
    products = []
    for inner, outer in shapes:
        x = torch.randn(2, PROBE_ROWS, inner, generator=generator)
        products.append((x, torch.randn(2, inner, outer, generator=generator) / inner**0.5))
    try:
        quantized = [(x, quantize_weight(w)) for x, w in products]
        int8_seconds = _best_time(lambda: [int8_baddbmm(None, x, w) for x, w in quantized])
    except RuntimeError:
        return False
    return int8_seconds * INT8_MARGIN < _best_time(lambda: [torch.bmm(x, w) for x, w in products])


def _best_time(run) -> float:
    run()
    best = float("inf")
    for _ in range(PROBE_REPEATS):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best
