"""`BiLSTMStack`: the biLM's stacked LSTMs, and the choice of the path that runs a call."""

from functools import cache
from typing import List, Optional, Tuple

import torch
from torch import nn

from ..int8 import Shape, int8_runs
from ..options import BiLMOptions
from . import inference, quantized, step
from .backward import lstm_layer
from .layout import FORGET_GATE, N_GATES, LayerState
from .paths import Graphs, RecurrencePaths
from .torch_lstm import lstm_layer_torch
from .weight_forms import (
    InferenceWeights,
    Int8Cache,
    Int8LayerWeights,
    inference_weights,
    int8_weights,
)


@cache
def resolve_tanh_kernel() -> None:
    """Have oneMKL choose its float tanh kernel on this thread alone, once per
    process. On a CPU, ATen's tanh calls MKL's VML from every worker thread on
    its share of the tensor, and oneMKL chooses a VML function's kernel lazily
    at its first call: where that first call runs on several threads at once,
    a thread can run a low-accuracy kernel on its share (pytorch/pytorch#188792).
    A call on one element runs on the calling thread only."""
    torch.tanh(torch.zeros(1))


class BiLSTMStack(nn.Module):
    """``n_layers`` LSTM layers with projection for each of two directions.

    The weights are those of bilm-tf with a leading direction axis and one
    matrix per gate: ``W_input[l]`` and ``W_hidden[l]`` are
    (2, 4, projection_dim, lstm_dim), ``bias[l]`` (2, 4, lstm_dim), gates in the
    order (input, new input, forget, output); ``W_proj[l]`` is
    (2, lstm_dim, projection_dim). A forget-gate bias of 1 is added at run time,
    the cell is clipped to ``cell_clip`` and the projected output to
    ``proj_clip``. Layers above the first add their input to their output when
    ``use_skip_connections`` is set; the recurrent state is the output before
    that addition.

    Sequences come packed time-major, both directions side by side (layout.py).
    One matrix per gate rather than one wide (projection_dim, 4 * lstm_dim)
    matrix: the per-step product then runs as 8 moderate GEMMs in one batched
    call, faster on CPU than 2 wide ones, and each gate's pre-activations come
    out contiguous.

    `forward` runs one of several paths, each in a module of its own, chosen
    by the call and by `paths` (`RecurrencePaths`, set with `use_paths`):
    without gradients, inference.py (from CUDA graphs, graphs.py, where
    `paths.graphs` is set; with int8 products, quantized.py, inside
    `int8.int8_products`); under autograd from the zero state, each layer whole
    (backward.py's hand-written backward pass, or torch_lstm.py); otherwise
    step by step (step.py).
    """

    def __init__(self, options: BiLMOptions, paths: Optional[RecurrencePaths] = None):
        super().__init__()
        resolve_tanh_kernel()
        self.n_layers = options.n_layers
        self.cell_clip = options.cell_clip
        self.proj_clip = options.proj_clip
        self.use_skip_connections = options.use_skip_connections
        self.paths = paths if paths is not None else RecurrencePaths()
        p, c = options.projection_dim, options.lstm_dim
        self.W_input = nn.ParameterList(nn.Parameter(torch.empty(2, N_GATES, p, c)) for _ in range(self.n_layers))
        self.W_hidden = nn.ParameterList(nn.Parameter(torch.empty(2, N_GATES, p, c)) for _ in range(self.n_layers))
        self.bias = nn.ParameterList(nn.Parameter(torch.zeros(2, N_GATES, c)) for _ in range(self.n_layers))
        self.W_proj = nn.ParameterList(nn.Parameter(torch.empty(2, c, p)) for _ in range(self.n_layers))
        for weights in (*self.W_input, *self.W_hidden, *self.W_proj):
            nn.init.uniform_(weights, -((1.0 / c) ** 0.5), (1.0 / c) ** 0.5)
        forget_bias = torch.zeros(N_GATES, c)
        forget_bias[FORGET_GATE] = 1.0
        self.register_buffer("forget_bias", forget_bias, persistent=False)
        # `weight_forms.inference_weights`: the gates' order in the wide product
        # (input, forget, output, new input), and each gate's scale (the sigmoid gates' halved).
        self.register_buffer("wide_gate_order", torch.tensor([0, FORGET_GATE, 3, 1]), persistent=False)
        self.register_buffer("gate_scale", torch.tensor([0.5, 1.0, 0.5, 0.5]).view(1, N_GATES, 1, 1), persistent=False)
        self._int8_cache = Int8Cache()  # per layer, its int8 weights and the stamp they were made from
        # Loading weights makes the CUDA graphs' copy of them again.
        self.register_load_state_dict_post_hook(_forget_graph_weights)

    def use_paths(self, paths: RecurrencePaths) -> None:
        """Run the calls from now on by `paths`."""
        self.paths = paths

    @property
    def graphs(self) -> Optional[Graphs]:
        """The CUDA graphs the recurrence without gradients runs from on a GPU
        (`RecurrenceGraphs`), or None: ``paths.graphs``."""
        return self.paths.graphs

    def forward(
        self,
        inputs: torch.Tensor,
        batch_sizes: List[int],
        initial_state: Optional[List[LayerState]] = None,
        return_final_state: bool = False,
        dropout: float = 0.0,
    ) -> Tuple[List[torch.Tensor], Optional[List[LayerState]]]:
        """Run both directions over every layer.

        inputs: (2, n_packed, projection_dim), packed time-major; row b of
            direction 1 is row b of direction 0 reversed over its own length.
        batch_sizes: the number of rows running at each step, non-increasing,
            summing to n_packed.
        initial_state: per layer (h, c) for all batch_sizes[0] rows; zeros when None.
        dropout: the rate of dropout on each layer's output as it goes into the
            next layer (pretraining sets it; the outputs returned have none).
        RETURNS: per layer its packed output (2, n_packed, projection_dim); and
            the final state per layer when asked.
        """
        needs_grad = torch.is_grad_enabled() and (
            inputs.requires_grad or any(p.requires_grad for p in self.parameters())
        )
        device_type = inputs.device.type
        product_dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None
        # From the zero state, handing no state back, over at least one step.
        stateless = initial_state is None and not return_final_state and bool(batch_sizes)
        if stateless and not needs_grad and product_dtype is None and not dropout:
            return self._without_gradients(inputs, batch_sizes), None
        if stateless and needs_grad and self.paths.hand_written_backward:
            return self._whole_layers(inputs, batch_sizes, dropout, product_dtype), None
        return step.run_layers(
            self, inputs, batch_sizes, initial_state, return_final_state, dropout, product_dtype, needs_grad
        )

    def _without_gradients(self, inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
        """Every layer's output without gradients, in float32, from the zero
        state: from CUDA graphs, with int8 products, or in place step by step."""
        graphs = self.paths.graphs
        if graphs is not None and inputs.is_cuda and inputs.dtype == self.W_proj[0].dtype == torch.float32:
            return graphs(self, inputs, batch_sizes)
        if inputs.device.type == "cpu" and int8_runs(self.int8_shapes):
            return quantized.run_layers(self, inputs, batch_sizes)
        return inference.run_layers(self, inputs, batch_sizes)

    def _whole_layers(
        self, inputs: torch.Tensor, batch_sizes: List[int], dropout: float, product_dtype: Optional[torch.dtype]
    ) -> List[torch.Tensor]:
        """Every layer's output under autograd from the zero state, each layer
        computed whole: as `torch.nn.LSTM` on `paths.torch_lstm_devices` for a
        stack without clipping, else by `backward.lstm_layer`."""
        torch_lstm = not self.cell_clip and not self.proj_clip and inputs.device.type in self.paths.torch_lstm_devices
        outputs: List[torch.Tensor] = []
        x = inputs
        for layer in range(self.n_layers):
            weights = (
                self.W_input[layer],
                self.W_hidden[layer],
                self.bias[layer],
                self.forget_bias,
                self.W_proj[layer],
                batch_sizes,
            )
            if torch_lstm:
                out = lstm_layer_torch(x, *weights)
            else:
                out = lstm_layer(x, *weights, self.cell_clip, self.proj_clip, product_dtype)
            if self.use_skip_connections and layer > 0:
                out = out + x
            outputs.append(out)
            x = nn.functional.dropout(out, dropout) if dropout and layer + 1 < self.n_layers else out
        return outputs

    def inference_weights(self, layer: int) -> InferenceWeights:
        """`layer`'s weights as the recurrence without gradients takes them
        (`weight_forms.inference_weights`)."""
        return inference_weights(self, layer)

    @property
    def int8_shapes(self) -> Tuple[Shape, ...]:
        """The (inner, outer) sizes of a step's products: recurrent (and input), projection."""
        _, _, p, c = self.W_hidden[0].shape
        return ((p, N_GATES * c), (c, p))

    def int8_weights(self, layer: int) -> Int8LayerWeights:
        """`layer`'s weights as the int8 recurrence takes them, made once per
        version of its parameters (`weight_forms.int8_weights`)."""
        return int8_weights(self, layer, self._int8_cache)

    def _inference(
        self,
        inputs: torch.Tensor,
        batch_sizes: List[int],
        weights: Optional[List[InferenceWeights]] = None,
        states: Optional[List[LayerState]] = None,
    ) -> List[torch.Tensor]:
        """Every layer's output without gradients, in float32, in place step by
        step (`inference.run_layers`), whatever the paths say of CUDA graphs and int8."""
        return inference.run_layers(self, inputs, batch_sizes, weights, states)

    def input_gates(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        """`layer`'s input-to-gate products and biases: x (2, rows, p) ->
        (2, 4, rows, c) (`step.input_gates`)."""
        return step.input_gates(x, self.W_input[layer], self.bias[layer], self.forget_bias)

    def gates(self, layer: int, gates_x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """`layer`'s gates' pre-activations (2, 4, n, c) at a step, from
        `input_gates`' rows of the step and the hidden state h (2, n, p) (`step.gates`)."""
        return step.gates(gates_x, h, self.W_hidden[layer])

    def cell(self, layer: int, pre_activations: torch.Tensor, c: torch.Tensor) -> LayerState:
        """`layer`'s new (h, c), clipped, from the gates' pre-activations and the cell (`step.cell`)."""
        return step.cell(pre_activations, c, self.W_proj[layer], self.cell_clip, self.proj_clip)


def _forget_graph_weights(module: BiLSTMStack, incompatible_keys) -> None:
    if module.graphs is not None:
        module.graphs.forget_weights()
