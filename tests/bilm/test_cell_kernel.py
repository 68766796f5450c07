"""The recurrence with the cell updated in one kernel (cell_kernel.py): the
kernel runs only on a GPU (tests/bilm/test_gpu.py checks it against the eight
kernels); here its arithmetic, written with torch's operations, stands in for
it on the CPU, to check what the recurrence does around it: a new cell tensor
each step, the rows that finish dropped, the running rows' cell handed back to
a chunk's state."""

from dataclasses import replace

import pytest
import torch

from spacy_elmo.bilm.recurrence import RecurrenceGraphs, inference

from .helpers import BATCH_LENGTHS, STACK_CHANGES, packed_inputs, scaled_stack

CALLS = []


def cell_update_in_torch(input_gate, forget_gate, output_gate, new_input, cell, clip):
    """The kernel's arithmetic, one rounding an operation, as new tensors."""
    CALLS.append(cell.shape)
    gates = [0.5 + 0.5 * torch.tanh(g) for g in (input_gate, forget_gate, output_gate)]
    updated = cell * gates[1] + gates[0] * torch.tanh(new_input)
    if clip:
        updated = updated.clamp(-clip, clip)
    return updated, torch.tanh(updated) * gates[2]


@pytest.mark.parametrize("changes", STACK_CHANGES)
def test_a_cell_updated_out_of_place_gives_the_in_place_values_bit_for_bit(monkeypatch, changes, gate_form, threads):
    model = scaled_stack(**changes)
    with torch.inference_mode():
        inputs = [packed_inputs(model, lengths) for lengths in BATCH_LENGTHS]
        in_place = [model.lstm._inference(x, batch_sizes) for x, batch_sizes in inputs]
        monkeypatch.setattr(inference, "fused_cell_update", cell_update_in_torch)
        model.lstm.use_paths(replace(model.lstm.paths, fused_cell_devices=("cpu",)))
        graphs = RecurrenceGraphs()  # off a GPU, its chunks run eagerly: the state carried between them
        CALLS.clear()
        for (x, batch_sizes), expected in zip(inputs, in_place):
            assert float(expected[-1].abs().max()) > 0.3
            for found in (model.lstm._inference(x, batch_sizes), graphs(model.lstm, x, batch_sizes)):
                for a, b in zip(found, expected):
                    assert torch.equal(a, b)
    assert len(CALLS) > 100  # the stand-in ran: a step and layer a call
