import pytest

from spacy_elmo.bilm import lstm


@pytest.fixture(params=["wide", "per gate"])
def gate_form(request, monkeypatch) -> str:
    """Each form of the gates' product in the recurrence without gradients
    (`BiLSTMStack.inference_weights`) for the small test LSTMs: "wide" as they
    run, "per gate" as large LSTMs run on a CPU."""
    if request.param == "per gate":
        monkeypatch.setattr(lstm, "PER_GATE_MIN_CELLS", 1)
    return request.param
