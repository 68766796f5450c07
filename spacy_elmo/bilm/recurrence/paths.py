"""Which implementation of the recurrence runs where several compute the same values."""

from dataclasses import dataclass
from typing import Any, List, Optional, Protocol, Tuple

import torch


class Graphs(Protocol):
    """What `RecurrencePaths.graphs` holds: graphs.py's `RecurrenceGraphs`, as
    the stack and `BiLM` use it."""

    max_graphs: int  # the most graphs kept

    def __call__(self, stack: Any, inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
        """Every layer's packed output from the `BiLSTMStack` `stack`, as
        `inference.run_layers` gives it."""
        ...

    def forget_weights(self) -> None:
        """Make the weights' buffers again at the next call."""
        ...


@dataclass(frozen=True)
class RecurrencePaths:
    """The paths `BiLSTMStack.forward` chooses from, held by the stack and set
    with `BiLSTMStack.use_paths` (``dataclasses.replace`` makes a changed copy).

    hand_written_backward: under autograd from the zero state, each layer runs
        as `backward.lstm_layer`, whose backward pass is written out: the same
        values and gradients, a faster and leaner backward pass. False: step by
        step under autograd (step.py, the reference the tests compare it with).
    torch_lstm_devices: devices on which a layer without clipping runs, in that
        same case, as `torch.nn.LSTM` (torch_lstm.py): cuDNN's fused recurrence
        on a GPU. Not the CPU, where torch's own LSTM with a projection is
        slower than `backward.lstm_layer`.
    fused_cell_devices: devices on which the recurrence without gradients
        (inference.py) updates the cell in one kernel (cell_kernel.py) rather
        than eight; () runs the eight everywhere.
    per_gate_devices: devices on which the recurrence without gradients takes,
        for LSTMs of `weight_forms.PER_GATE_MIN_CELLS` cells or more, one
        product per gate from the weights in place rather than one wide product
        from a copy (`weight_forms.inference_weights`).
    graphs: where set (`BiLM.use_cuda_graphs`), the recurrence without
        gradients runs on a GPU, in float32, from CUDA graphs (graphs.py)
        instead of step by step from Python.
    """

    hand_written_backward: bool = True
    torch_lstm_devices: Tuple[str, ...] = ("cuda",)
    fused_cell_devices: Tuple[str, ...] = ("cuda",)
    per_gate_devices: Tuple[str, ...] = ("cpu",)
    graphs: Optional[Graphs] = None
