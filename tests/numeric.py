"""Comparing float32 results with a tolerance that follows their magnitude.

Rounding errors grow with the values: an absolute tolerance right for values
near 1 fails on values near 50 on a machine whose BLAS sums in another order.
"""

from contextlib import contextmanager
from typing import Iterator

import numpy
import torch

# float32 has a relative precision of 1.2e-7; a few steps of accumulation
# (convolutions, LSTM recurrences) stay well within 1e-6 of the largest value.
RTOL = 1e-6


def to_numpy(x) -> numpy.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return numpy.asarray(x, dtype=numpy.float64)


def max_error(actual, expected) -> float:
    actual, expected = to_numpy(actual), to_numpy(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    return float(numpy.abs(actual - expected).max()) if actual.size else 0.0


def scale_of(expected) -> float:
    """The largest magnitude of `expected`, and at least 1."""
    expected = to_numpy(expected)
    return max(1.0, float(numpy.abs(expected).max()) if expected.size else 0.0)


def assert_close_to_scale(actual, expected, rtol: float = RTOL, what: str = "") -> None:
    """Every |actual - expected| <= rtol * the largest |expected| (at least 1)."""
    error, tolerance = max_error(actual, expected), rtol * scale_of(expected)
    assert error <= tolerance, (
        f"{what}: max |difference| {error:.3g} > {tolerance:.3g} ({rtol:g} x {scale_of(expected):.3g})"
    )


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's intra-op thread count set to `n` for the block, then restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
