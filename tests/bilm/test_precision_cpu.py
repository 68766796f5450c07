"""precision "bf16" on a CPU: autocast where the CPU has bfloat16 instructions,
float32 with a warning where it does not."""

import pytest
import torch

from spacy_elmo.bilm import precision as precision_module
from spacy_elmo.bilm.precision import cpu_has_bf16, precision


def test_without_bf16_instructions_it_says_so_and_computes_float32(monkeypatch):
    monkeypatch.setattr(precision_module, "cpu_has_bf16", lambda: False)
    with pytest.warns(UserWarning, match="no bfloat16 instructions"):
        with precision("cpu", "bf16"):
            assert not torch.is_autocast_enabled("cpu")
            assert (torch.ones(4, 4) @ torch.ones(4, 4)).dtype == torch.float32


@pytest.mark.parametrize("name", ["fp32", "tf32"])
def test_fp32_and_tf32_compute_float32_on_a_cpu(name, recwarn):
    with precision("cpu", name):
        assert not torch.is_autocast_enabled("cpu")
    assert not recwarn.list


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no bfloat16 instructions (AMX or AVX-512 BF16)")
def test_with_bf16_instructions_the_products_run_in_bfloat16(recwarn):
    with precision("cpu", "bf16"):
        assert (torch.ones(4, 4) @ torch.ones(4, 4)).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")  # only inside the block
    assert not recwarn.list
