"""Which path of the recurrence `BiLSTMStack.forward` runs (spacy_elmo/bilm/recurrence/), chosen by
the call and by the stack's own `RecurrencePaths`."""

import copy
import pickle
from dataclasses import FrozenInstanceError, replace

import pytest
import torch

from spacy_elmo.bilm import BiLMOptions
from spacy_elmo.bilm.int8 import int8_products
from spacy_elmo.bilm.recurrence import BiLSTMStack, RecurrenceGraphs, RecurrencePaths, inference, quantized, step
from spacy_elmo.bilm.recurrence import stack as stack_module

OPTIONS = dict(char_embedding_dim=8, filters=[(1, 8)], n_highway=0, lstm_dim=16, projection_dim=8, n_layers=2)
UNCLIPPED = {"cell_clip": 0.0, "proj_clip": 0.0}
BATCH_SIZES = [3, 3, 2, 1]


@pytest.fixture
def ran(monkeypatch):
    """The paths each call ran, by name, in order (the real ones run)."""
    names = []

    def counted(module, attribute, name):
        run = getattr(module, attribute)

        def recorded(*args, **kwargs):
            names.append(name)
            return run(*args, **kwargs)

        monkeypatch.setattr(module, attribute, recorded)

    counted(inference, "run_layers", "inference")
    counted(quantized, "run_layers", "int8")
    counted(step, "run_layers", "step")
    counted(stack_module, "lstm_layer", "backward")
    counted(stack_module, "lstm_layer_torch", "torch_lstm")
    return names


def inputs(requires_grad: bool = False) -> torch.Tensor:
    x = torch.randn(2, sum(BATCH_SIZES), OPTIONS["projection_dim"], generator=torch.Generator().manual_seed(0))
    return x.requires_grad_(requires_grad)


def zero_state(stack: BiLSTMStack):
    return [(torch.zeros(2, BATCH_SIZES[0], 8), torch.zeros(2, BATCH_SIZES[0], 16)) for _ in range(stack.n_layers)]


@pytest.mark.parametrize(
    "changes, paths, call, expected",
    [
        ({}, {}, "no_grad", ["inference"]),
        ({}, {}, "int8", ["int8"]),
        ({}, {"graphs": RecurrenceGraphs()}, "no_grad", ["inference"]),  # graphs run on a GPU only
        ({}, {}, "no_grad_from_a_state", ["step"]),
        ({}, {}, "autocast_no_grad", ["step"]),
        ({}, {}, "grad", ["backward", "backward"]),  # a layer a call
        ({}, {"hand_written_backward": False}, "grad", ["step"]),
        ({}, {}, "grad_from_a_state", ["step"]),
        (UNCLIPPED, {"torch_lstm_devices": ("cpu",)}, "grad", ["torch_lstm", "torch_lstm"]),
        ({}, {"torch_lstm_devices": ("cpu",)}, "grad", ["backward", "backward"]),  # clipped: never torch's LSTM
        (UNCLIPPED, {}, "grad", ["backward", "backward"]),  # torch's LSTM on a GPU only, by default
    ],
)
def test_forward_runs_the_path_the_call_and_the_paths_choose(ran, changes, paths, call, expected):
    torch.manual_seed(0)
    stack = BiLSTMStack(BiLMOptions(**{**OPTIONS, **changes}))
    stack.use_paths(replace(stack.paths, **paths))
    if call == "no_grad":
        with torch.no_grad():
            stack(inputs(), BATCH_SIZES)
    elif call == "int8":
        with torch.no_grad(), int8_products():
            stack(inputs(), BATCH_SIZES)
    elif call == "no_grad_from_a_state":
        with torch.no_grad():
            stack(inputs(), BATCH_SIZES, zero_state(stack), return_final_state=True)
    elif call == "autocast_no_grad":
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            stack(inputs(), BATCH_SIZES)
    elif call == "grad":
        stack(inputs(requires_grad=True), BATCH_SIZES)
    else:
        stack(inputs(requires_grad=True), BATCH_SIZES, zero_state(stack))
    assert ran == expected


def test_each_stack_runs_by_its_own_paths(ran):
    torch.manual_seed(0)
    own_steps, default = BiLSTMStack(BiLMOptions(**OPTIONS)), BiLSTMStack(BiLMOptions(**OPTIONS))
    own_steps.use_paths(RecurrencePaths(hand_written_backward=False))
    own_steps(inputs(requires_grad=True), BATCH_SIZES)
    default(inputs(requires_grad=True), BATCH_SIZES)
    assert ran == ["step", "backward", "backward"]
    assert default.paths == RecurrencePaths() and BiLSTMStack(BiLMOptions(**OPTIONS)).paths == RecurrencePaths()


def test_the_paths_are_set_through_the_stack_and_travel_with_a_copy():
    stack = BiLSTMStack(BiLMOptions(**OPTIONS))
    with pytest.raises(FrozenInstanceError):
        stack.paths.hand_written_backward = False  # type: ignore[misc]
    with pytest.raises(AttributeError):
        stack.graphs = RecurrenceGraphs()  # type: ignore[misc]
    paths = RecurrencePaths(hand_written_backward=False, per_gate_devices=(), graphs=RecurrenceGraphs(max_graphs=3))
    stack.use_paths(paths)
    assert stack.paths is paths and stack.graphs is paths.graphs
    for copied in (copy.deepcopy(stack), pickle.loads(pickle.dumps(stack))):
        assert replace(copied.paths, graphs=None) == replace(paths, graphs=None)
        assert copied.graphs is not paths.graphs and copied.graphs.max_graphs == 3
