"""Matrix products whose every row comes out with the same bits whatever else is
computed with it.

A token's vectors must not depend on what else is in its batch, on the batch's
order, or on how many threads run. On a CPU, PyTorch's BLAS (MKL) breaks that
for a plain product in two ways:

- it multiplies a matrix of 1 to 3 rows by another method, which rounds
  differently (and 3 to 7 times worse on long dot products: RMS error 2e-6
  against 3e-7 for products of length 4096 over unit-scale values, checked
  against float64);
- it cuts one product over several threads into blocks of rows, and a thread
  whose block has 1 to 3 rows takes that other method for them: which rows do
  depends on the row count and on the thread count (a product of 9 to 11 rows
  at 2 threads on an AVX2 CPU).

MKL's batched product computes each matrix of a batch whole on one thread, and
a matrix of at least MIN_ROWS rows gives each row the same bits whatever the
matrix's size. So `pad_rows` makes a product's rows up to MIN_ROWS with copies
of a row (their results dropped), and `addmm_by_blocks` computes a product on a
CPU as a batch of blocks of rows; the batched products of the recurrence
(recurrence/) write contiguous outputs, which MKL's batched path needs.
tests/bilm/test_products.py checks both at several row and thread counts.
"""

from typing import Tuple

import torch

MIN_ROWS = 4

# `addmm_by_blocks` cuts a product into as many blocks as there are threads, as
# long as each block keeps at least this many rows (fewer, larger blocks repack
# the weights less often).
MIN_BLOCK_ROWS = 32


def pad_rows(x: torch.Tensor, dim: int, rows: int = MIN_ROWS) -> torch.Tensor:
    """`x` with copies of its first row along `dim` appended, up to `rows` rows."""
    missing = rows - x.shape[dim]
    if missing <= 0 or x.shape[dim] == 0:
        return x
    sizes = [missing if d == dim else -1 for d in range(x.dim())]
    return torch.cat([x, x.narrow(dim, 0, 1).expand(*sizes)], dim=dim)


def addmm_by_blocks(bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``bias + x @ weight`` for x (n, k), weight (k, m), bias (m,) -> (n, m),
    each row's bits independent of n and of the thread count.

    On a CPU the rows run as a batch of at least two equal blocks of at least
    MIN_ROWS rows (zero rows added to the last), one block a thread; elsewhere
    as one product (a GPU's products are not bit-identical across shapes anyway).
    """
    n, k = x.shape
    if x.device.type != "cpu" or n == 0:
        return torch.addmm(bias, x, weight)
    n_blocks, block_rows = block_layout(n)
    missing = n_blocks * block_rows - n
    if missing:
        x = torch.cat([x, x.new_zeros(missing, k)])
    blocks = x.view(n_blocks, block_rows, k)
    out = torch.baddbmm(bias, blocks, weight.expand(n_blocks, k, weight.shape[1]))
    return out.view(n_blocks * block_rows, -1)[:n]


def block_layout(n: int) -> Tuple[int, int]:
    """How `addmm_by_blocks` cuts n > 0 rows on a CPU at torch's current thread
    count: (blocks, rows a block), at least two blocks of at least MIN_ROWS rows."""
    n_blocks = max(2, min(torch.get_num_threads(), n // MIN_BLOCK_ROWS))
    return n_blocks, max(MIN_ROWS, -(-n // n_blocks))
