import pytest

from spacy_elmo.bilm.recurrence import weight_forms

from ..numeric import torch_threads


@pytest.fixture(params=["wide", "per gate"])
def gate_form(request, monkeypatch) -> str:
    """Each form of the gates' product in the recurrence without gradients
    (`BiLSTMStack.inference_weights`) for the small test LSTMs: "wide" as they
    run, "per gate" as large LSTMs run on a CPU."""
    if request.param == "per gate":
        monkeypatch.setattr(weight_forms, "PER_GATE_MIN_CELLS", 1)
    return request.param


@pytest.fixture(params=[1, 2], ids=["1 thread", "2 threads"])
def threads(request):
    """torch's intra-op thread count for a bit-for-bit test: products cut over
    threads can round otherwise (products.py), so such tests run at both."""
    with torch_threads(request.param):
        yield request.param
