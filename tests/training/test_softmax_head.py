"""The softmax head's target log-probabilities (`target_log_softmax`) against
PyTorch's own computation: the same values and gradients, in float64."""
import pytest
import torch
from torch.nn import functional as F

from spacy_elmo.training import SoftmaxHead
from spacy_elmo.training.objective.softmax import target_log_softmax

from ..numeric import assert_close_to_scale


def values_and_gradients(compute, head, hidden, targets):
    head.zero_grad(set_to_none=True)
    hidden = hidden.detach().requires_grad_(True)
    log_probs = compute(hidden, targets)
    (log_probs * torch.linspace(-1.0, 2.0, len(targets), dtype=hidden.dtype)).sum().backward()
    return log_probs.detach(), hidden.grad, {name: p.grad for name, p in head.named_parameters()}


@pytest.mark.parametrize("kind, cutoffs", [("adaptive", [10, 40]), ("adaptive", [25]), ("full", [])])
def test_target_log_probs_and_gradients_equal_pytorchs(kind, cutoffs):
    torch.manual_seed(0)
    head = SoftmaxHead(16, 100, kind=kind, cutoffs=cutoffs).double()
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0.0, 1.0)
    hidden = torch.randn(64, 16, dtype=torch.float64)
    targets = torch.randint(0, 100, (64,))
    targets[:3] = torch.tensor([0, 99, cutoffs[0] if cutoffs else 50])  # both ends and a cluster's first word

    def pytorchs(h, t):
        if kind == "adaptive":
            return head.adaptive(h, t).output
        return -F.cross_entropy(head.linear(h), t, reduction="none")

    got = values_and_gradients(head.target_log_prob, head, hidden, targets)
    expected = values_and_gradients(pytorchs, head, hidden, targets)
    assert got[0].dtype == torch.float64
    assert_close_to_scale(got[0], expected[0], rtol=1e-12, what="log-probabilities")
    assert_close_to_scale(got[1], expected[1], rtol=1e-12, what="hidden gradient")
    for name, grad in expected[2].items():
        if grad is None:  # a tail cluster no target reached
            assert got[2][name] is None or not got[2][name].any(), name
        else:
            assert_close_to_scale(got[2][name], grad, rtol=1e-12, what=name)


def test_a_second_backward_pass_is_refused_not_wrong():
    logits = torch.randn(4, 7, requires_grad=True)
    out = target_log_softmax(logits * 2, torch.tensor([0, 3, 6, 2]))
    out.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="inplace"):
        out.sum().backward()


def test_under_bf16_autocast_the_result_is_float32_and_close():
    torch.manual_seed(0)
    head = SoftmaxHead(16, 300, kind="adaptive", cutoffs=[50, 150])
    hidden, targets = torch.randn(40, 16), torch.randint(0, 300, (40,))
    exact = head.target_log_prob(hidden, targets)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = head.target_log_prob(hidden, targets)
    assert low.dtype == torch.float32
    assert_close_to_scale(low, exact, rtol=3e-2, what="bf16 products")  # bfloat16 has 8 bits of mantissa
