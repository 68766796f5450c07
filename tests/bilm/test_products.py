"""Products whose rows do not depend on what else is computed (products.py)."""

import pytest
import torch

from spacy_elmo.bilm.products import MIN_ROWS, addmm_by_blocks, pad_rows

from ..numeric import assert_close_to_scale, torch_threads

ROW_COUNTS = [*range(1, 70), 100, 257, 1000]


@pytest.mark.parametrize("k, m", [(48, 48), (124, 124), (512, 128), (8, 32)])
@pytest.mark.parametrize("transposed", [False, True], ids=["weight", "weight.t()"])
def test_each_row_has_the_same_bits_whatever_the_rows_and_threads(k, m, transposed):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1000, k, generator=generator)
    weight = torch.randn(m, k, generator=generator).t() if transposed else torch.randn(k, m, generator=generator)
    bias = torch.randn(m, generator=generator)
    with torch_threads(1):
        expected = addmm_by_blocks(bias, x, weight)
    assert_close_to_scale(expected, torch.addmm(bias.double(), x.double(), weight.double()), rtol=1e-5)
    for threads in (1, 2, 3):
        with torch_threads(threads):
            for n in ROW_COUNTS:
                assert torch.equal(addmm_by_blocks(bias, x[:n], weight), expected[:n]), (threads, n)


def test_products_by_blocks_carry_gradients():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(37, 12, generator=generator, requires_grad=True)
    weight = torch.randn(12, 5, generator=generator, requires_grad=True)
    bias = torch.randn(5, generator=generator, requires_grad=True)
    grads = torch.autograd.grad(addmm_by_blocks(bias, x, weight).square().sum(), (bias, x, weight))
    expected = torch.autograd.grad(torch.addmm(bias, x, weight).square().sum(), (bias, x, weight))
    for found, wanted in zip(grads, expected):
        assert_close_to_scale(found, wanted, rtol=1e-5)


def test_pad_rows_appends_copies_of_the_first_row():
    x = torch.arange(6.0).view(2, 3)
    padded = pad_rows(x, 0)
    assert padded.shape == (MIN_ROWS, 3)
    assert torch.equal(padded[2:], x[:1].expand(2, 3))
    assert pad_rows(torch.zeros(0, 3), 0).shape == (0, 3)
