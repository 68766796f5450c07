"""Matrix products with few rows, made as exact as the others (padding rows).

(Not to be confused with packing.py, which lays out a batch's rows for the
LSTMs: this module only pads a product's rows up to MIN_ROWS.)

MKL, PyTorch's CPU BLAS, multiplies a matrix of 1 to 3 rows by another method
than larger ones, and that method rounds 3 to 7 times worse on long dot
products (RMS error 2e-6 against 3e-7 for products of length 4096 over
unit-scale values, checked against float64). The biLM meets such products at
the last steps of a batch's longest sentence and when a call brings 1 to 3
new tokens; computed as they come, those vectors would be less exact than the
others and would depend on what else is in the batch by up to 1e-5. So they
are computed with copies of a row added, up to MIN_ROWS, and the copies'
results dropped. A product with so few rows takes as long as one with MIN_ROWS.
"""
import torch

MIN_ROWS = 4


def pad_rows(x: torch.Tensor, dim: int, rows: int = MIN_ROWS) -> torch.Tensor:
    """`x` with copies of its first row along `dim` appended, up to `rows` rows."""
    missing = rows - x.shape[dim]
    if missing <= 0 or x.shape[dim] == 0:
        return x
    sizes = [missing if d == dim else -1 for d in range(x.dim())]
    return torch.cat([x, x.narrow(dim, 0, 1).expand(*sizes)], dim=dim)
