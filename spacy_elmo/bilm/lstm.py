"""Stacked LSTMs with a projection, forward and backward computed side by side."""
from functools import cache
from typing import TYPE_CHECKING, Iterable, List, Optional, Tuple

import torch
from torch import nn

from .cell_kernel import fused_cell_update
from .int8 import Int8Weight, int8_baddbmm, int8_enabled, quantize_weight
from .lstm_backward import lstm_layer
from .lstm_torch import lstm_layer_torch
from .options import BiLMOptions
from .products import MIN_ROWS, pad_rows

if TYPE_CHECKING:
    from .lstm_graphs import RecurrenceGraphs

# Per layer: h (2, batch, projection_dim) and c (2, batch, lstm_dim); axis 0 is the direction.
LayerState = Tuple[torch.Tensor, torch.Tensor]
# A layer's W_input, W_hidden and W_proj, as the products take them (see `layer_weights`).
LayerWeights = Tuple[torch.Tensor, torch.Tensor, torch.Tensor]
# A layer's W_input, W_hidden, bias and W_proj as the in-place recurrence takes them (`inference_weights`).
InferenceWeights = Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
# A layer's W_input, W_hidden (wide form), bias and W_proj as the int8 recurrence takes them (`int8_weights`).
Int8LayerWeights = Tuple[Int8Weight, Int8Weight, torch.Tensor, Int8Weight]

N_GATES = 4  # input, new input, forget, output: bilm-tf's order
FORGET_GATE = 2

# The input-to-gate products are computed for blocks of time steps holding at
# most this many rows, so their buffer stays small (2 * 4 * 512 * lstm_dim
# floats, 64 MiB for the original model) whatever the batch.
ROWS_PER_INPUT_BLOCK = 512

# `BiLSTMStack._inference_layer` computes a step of fewer rows with copies of a
# row added up to this many (products.py): MKL rounds products of up to 6 rows
# by another method for some shapes (8 x 8, the smallest biLMs'), and a token's
# layers would then depend on how many rows run beside it.
MIN_STEP_ROWS = 8

# `BiLSTMStack._inference_layer` on `per_gate_devices`: LSTMs of at least this
# many cells take one product per gate from their weights as they are; smaller
# ones, one wide product from a copy of the weights (see `inference_weights`).
PER_GATE_MIN_CELLS = 512


@cache
def resolve_tanh_kernel() -> None:
    """Have oneMKL choose its float tanh kernel on this thread alone, once per
    process. On a CPU, ATen's tanh calls MKL's VML from every worker thread on
    its share of the tensor, and oneMKL chooses a VML function's kernel lazily
    at its first call: where that first call runs on several threads at once,
    a thread can run a low-accuracy kernel on its share (pytorch/pytorch#188792;
    here, with 2 threads, 7 and 9 fresh processes in 30 gave a first tanh with
    errors up to 9e-5: benchmarks/README.md). A call on one element runs on the
    calling thread only."""
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

    Sequences come packed time-major, rows sorted longest first (as in
    ``torch.nn.utils.rnn.PackedSequence``): step t holds rows
    ``0 .. batch_sizes[t] - 1``, so only the rows still running are computed and
    padding never is. The backward direction is fed time-reversed sequences, so
    both directions run as one batched recurrence.

    One matrix per gate rather than one wide (projection_dim, 4 * lstm_dim)
    matrix: the per-step product then runs as 8 moderate GEMMs in one batched
    call, faster on CPU than 2 wide ones (144 against 121 GFLOP/s for the
    original model's 32-row steps on 2 cores), and each gate's pre-activations
    come out contiguous.
    """

    # Under autograd from the zero state, each layer runs as `lstm_layer`
    # (lstm_backward.py), whose backward pass is written out: the same values
    # and gradients, a faster and leaner backward pass. False: step by step
    # under autograd (the reference the tests compare it with).
    hand_written_backward = True
    # Devices on which a layer without clipping runs, in that same case, as
    # `torch.nn.LSTM` (lstm_torch.py): cuDNN's fused recurrence on a GPU. Not
    # the CPU, where torch's own LSTM with a projection is slower than `lstm_layer`.
    torch_lstm_devices: Tuple[str, ...] = ("cuda",)
    # Devices on which the recurrence without gradients updates the cell in one
    # kernel (cell_kernel.py) rather than eight; () runs the eight everywhere.
    fused_cell_devices: Tuple[str, ...] = ("cuda",)
    # Devices on which the recurrence without gradients takes, for LSTMs of
    # PER_GATE_MIN_CELLS cells or more, one product per gate from the weights in
    # place rather than one wide product from a copy (`inference_weights`).
    per_gate_devices: Tuple[str, ...] = ("cpu",)
    # Where set (`BiLM.use_cuda_graphs`), the recurrence without gradients runs on
    # a GPU, in float32, from CUDA graphs (lstm_graphs.py) instead of step by step
    # from Python.
    graphs: Optional["RecurrenceGraphs"] = None

    def __init__(self, options: BiLMOptions):
        super().__init__()
        resolve_tanh_kernel()
        self.n_layers = options.n_layers
        self.cell_clip = options.cell_clip
        self.proj_clip = options.proj_clip
        self.use_skip_connections = options.use_skip_connections
        p, c = options.projection_dim, options.lstm_dim
        self.W_input = nn.ParameterList(nn.Parameter(torch.empty(2, N_GATES, p, c)) for _ in range(self.n_layers))
        self.W_hidden = nn.ParameterList(nn.Parameter(torch.empty(2, N_GATES, p, c)) for _ in range(self.n_layers))
        self.bias = nn.ParameterList(nn.Parameter(torch.zeros(2, N_GATES, c)) for _ in range(self.n_layers))
        self.W_proj = nn.ParameterList(nn.Parameter(torch.empty(2, c, p)) for _ in range(self.n_layers))
        for weights in (*self.W_input, *self.W_hidden, *self.W_proj):
            nn.init.uniform_(weights, -(1.0 / c) ** 0.5, (1.0 / c) ** 0.5)
        forget_bias = torch.zeros(N_GATES, c)
        forget_bias[FORGET_GATE] = 1.0
        self.register_buffer("forget_bias", forget_bias, persistent=False)
        # `inference_weights`: the gates' order in the wide product (input, forget,
        # output, new input), and each gate's scale (the sigmoid gates' halved).
        self.register_buffer("wide_gate_order", torch.tensor([0, FORGET_GATE, 3, 1]), persistent=False)
        self.register_buffer("gate_scale", torch.tensor([0.5, 1.0, 0.5, 0.5]).view(1, N_GATES, 1, 1),
                             persistent=False)
        # `int8_weights`: per layer, (the parameters' stamp, their int8 form).
        self._int8_cache: dict = {}

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
        # Without gradients, in float32, from the zero state: the recurrence in place
        # on preallocated buffers, one gate product a step (`_inference`).
        if (
            not needs_grad and product_dtype is None and initial_state is None and not return_final_state
            and not dropout and batch_sizes
        ):
            if self.graphs is not None and inputs.is_cuda and inputs.dtype == self.W_proj[0].dtype == torch.float32:
                return self.graphs(self, inputs, batch_sizes), None
            if int8_enabled() and device_type == "cpu":
                return self._int8_inference(inputs, batch_sizes), None
            return self._inference(inputs, batch_sizes), None
        offsets = _offsets(batch_sizes)
        blocks = _input_blocks(offsets)
        batch = batch_sizes[0] if batch_sizes else 0
        # Under autocast the products run in bfloat16/float16 and make their own
        # outputs; the shared float32 buffer is for full precision only.
        scratch = None if needs_grad or product_dtype is not None else self._input_scratch(inputs, offsets, blocks)
        outputs: List[torch.Tensor] = []
        final_states: List[LayerState] = []
        hand_written = (
            needs_grad and self.hand_written_backward and initial_state is None and not return_final_state
            and bool(batch_sizes)
        )
        torch_lstm = not self.cell_clip and not self.proj_clip and device_type in self.torch_lstm_devices
        x = inputs
        for layer in range(self.n_layers):
            if hand_written:
                weights = (self.W_input[layer], self.W_hidden[layer], self.bias[layer], self.forget_bias,
                           self.W_proj[layer], batch_sizes)
                if torch_lstm:
                    out = lstm_layer_torch(x, *weights)
                else:
                    out = lstm_layer(x, *weights, self.cell_clip, self.proj_clip, product_dtype)
                if self.use_skip_connections and layer > 0:
                    out = out + x
                outputs.append(out)
                x = nn.functional.dropout(out, dropout) if dropout and layer + 1 < self.n_layers else out
                continue
            if initial_state is None:
                h = x.new_zeros(2, batch, self.W_proj[layer].shape[2])
                c = x.new_zeros(2, batch, self.W_proj[layer].shape[1])
            else:
                h, c = initial_state[layer]
            out = x.new_empty(x.shape)
            final_h, final_c = (h.clone(), c.clone()) if return_final_state else (h, c)
            weights = self.layer_weights(layer, product_dtype)
            for first, end in blocks:
                block_start = offsets[first]
                gates_x = self.input_gates(layer, x[:, block_start : offsets[end]], scratch, weights)
                for t in range(first, end):
                    n, start = batch_sizes[t], offsets[t] - block_start
                    h, c = self._step(layer, gates_x[:, :, start : start + n], h[:, :n], c[:, :n], weights)
                    out[:, offsets[t] : offsets[t + 1]] = h
                    ending = batch_sizes[t + 1] if t + 1 < len(batch_sizes) else 0
                    if return_final_state and ending < n:
                        final_h[:, ending:n] = h[:, ending:n]
                        final_c[:, ending:n] = c[:, ending:n]
            if self.use_skip_connections and layer > 0:
                out = out + x
            outputs.append(out)
            final_states.append((final_h, final_c))
            x = nn.functional.dropout(out, dropout) if dropout and layer + 1 < self.n_layers else out
        return outputs, (final_states if return_final_state else None)

    def _inference(
        self, inputs: torch.Tensor, batch_sizes: List[int], weights: Optional[List[InferenceWeights]] = None,
        states: Optional[List[LayerState]] = None,
    ) -> List[torch.Tensor]:
        """Every layer's output without gradients, in float32 (`_inference_layer`,
        layer after layer); as `forward`'s outputs.

        weights: every layer's `inference_weights` (made here when None).
        states: every layer's (h, c) for all ``batch_sizes[0]`` rows, at least
            MIN_STEP_ROWS of them, to start from (the zero state when None),
            updated in place: c for every row (for the last step's rows where the
            cell is updated in one kernel, `fused_cell_devices`), h for the last
            step's rows (its output before any skip connection).
        """
        offsets = _offsets(batch_sizes)
        blocks = _input_blocks(offsets)
        scratch = self._input_scratch(inputs, offsets, blocks)
        outputs: List[torch.Tensor] = []
        x = inputs
        for layer in range(self.n_layers):
            out = self._inference_layer(
                layer, x, batch_sizes, offsets, blocks, scratch,
                weights[layer] if weights is not None else self.inference_weights(layer),
                states[layer] if states is not None else None,
            )
            if states is not None:
                states[layer][0][:, : batch_sizes[-1]].copy_(out[:, offsets[-2] :])
            if self.use_skip_connections and layer > 0:
                out += x
            outputs.append(out)
            x = out
        return outputs

    def _input_scratch(self, inputs: torch.Tensor, offsets: List[int], blocks: List[Tuple[int, int]]) -> torch.Tensor:
        """One buffer for the input-to-gate products of every block, without
        gradients: a fresh buffer per block (tens of MiB) costs more in page
        faults on first touch than the products' bias copy."""
        block_rows = max([MIN_STEP_ROWS] + [offsets[end] - offsets[first] for first, end in blocks])
        return inputs.new_empty(2 * N_GATES * block_rows * self.W_input[0].shape[3])

    def inference_weights(self, layer: int) -> InferenceWeights:
        """`layer`'s weights as `_inference_layer` takes them. Each gate's
        pre-activation comes out halved for the sigmoid gates (exact: a power of
        two), so that one tanh activates every gate, then sigmoid(x) = 1/2 +
        tanh(x / 2) / 2. Two forms:

        - wide: the four gates' weights side by side, (2, p, 4 * c) each,
          ordered (input, forget, output, new input) so that the sigmoid gates
          are contiguous, the sigmoid gates' weights halved: one product per
          direction, from a copy made here.
        - per gate, on `per_gate_devices` for LSTMs of PER_GATE_MIN_CELLS cells
          or more: W_input and W_hidden as they are, one (p, c) matrix per
          direction and gate in bilm-tf's order, (8, p, c) views of the
          parameters; the products take the input and the hidden state
          halved for the sigmoid gates instead. For the original model on a
          CPU the copy, 128 MiB of fresh memory a layer and call, cost more
          than the per-gate products lose to the wide one (benchmarks/README.md,
          bench_overhead.py's fourth pass: 0.71 of the time at batch 32).

        Either way the biases come with the forget gate's 1 added and the
        sigmoid gates' halved, (2, 1, 4 * c) or (8, 1, c); W_proj (2, c, p).
        """
        p, c_dim = self.W_proj[layer].shape[2], self.W_proj[layer].shape[1]
        if self.W_proj[layer].device.type not in self.per_gate_devices or c_dim < PER_GATE_MIN_CELLS:
            return self._wide_weights(layer)
        bias = (self.bias[layer] + self.forget_bias) * self.gate_scale[:, :, :, 0]
        return (self.W_input[layer].view(2 * N_GATES, p, c_dim), self.W_hidden[layer].view(2 * N_GATES, p, c_dim),
                bias.view(2 * N_GATES, 1, c_dim), self.W_proj[layer])

    def _wide_weights(self, layer: int) -> InferenceWeights:
        """`inference_weights`' wide form of `layer`'s weights."""
        p, c_dim = self.W_proj[layer].shape[2], self.W_proj[layer].shape[1]
        # Reordered and scaled by buffers on the device: an index or a scale copied
        # from a host list would make the host wait for the GPU.
        order, scale = self.wide_gate_order, self.gate_scale.index_select(1, self.wide_gate_order)
        bias = self.bias[layer] + self.forget_bias

        def wide(w: torch.Tensor) -> torch.Tensor:  # (2, 4, p, c) -> (2, p, 4 * c)
            out = w.new_empty(2, p, N_GATES, c_dim)
            torch.mul(w.index_select(1, order), scale, out=out.permute(0, 2, 1, 3))
            return out.view(2, p, N_GATES * c_dim)

        W_input, W_hidden = wide(self.W_input[layer]), wide(self.W_hidden[layer])
        return W_input, W_hidden, (bias.index_select(1, order) * scale[:, :, :, 0]).view(2, 1, -1), self.W_proj[layer]

    def int8_weights(self, layer: int) -> Int8LayerWeights:
        """`layer`'s weights as `_int8_layer` takes them: the wide form of
        `inference_weights` with W_input, W_hidden and W_proj quantised per
        output column (int8.py), the bias as it is. Made once per version of
        the layer's parameters: cached under their storage and version counters
        (torch bumps a parameter's counter at each change in place: an
        optimiser's step, ``load_state_dict``, ``copy_``), made again after
        ``to(...)`` or any change."""
        parameters = (self.W_input[layer], self.W_hidden[layer], self.bias[layer], self.W_proj[layer])
        stamp = parameters_stamp(parameters)
        cached = self._int8_cache.get(layer)
        if cached is None or cached[0] != stamp:
            with torch.no_grad():
                W_input, W_hidden, bias, W_proj = self._wide_weights(layer)
                cached = stamp, (quantize_weight(W_input), quantize_weight(W_hidden), bias, quantize_weight(W_proj))
            self._int8_cache[layer] = cached
        return cached[1]

    def _int8_inference(self, inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
        """Every layer's output without gradients from the zero state, with the
        products in int8 (`_int8_layer`); as `forward`'s outputs."""
        offsets = _offsets(batch_sizes)
        blocks = _input_blocks(offsets)
        outputs: List[torch.Tensor] = []
        x = inputs
        for layer in range(self.n_layers):
            out = self._int8_layer(x, batch_sizes, offsets, blocks, self.int8_weights(layer))
            if self.use_skip_connections and layer > 0:
                out += x
            outputs.append(out)
            x = out
        return outputs

    def _int8_layer(
        self, x: torch.Tensor, batch_sizes: List[int], offsets: List[int], blocks: List[Tuple[int, int]],
        weights: Int8LayerWeights,
    ) -> torch.Tensor:
        """One layer from the zero state with its input, recurrent and projection
        products in int8 (`int8_baddbmm`), the gates, cell and clips in float32 as
        in `_inference_layer` (wide form: one tanh over every gate, the sigmoid
        gates' pre-activations halved). x: (2, n_packed, p) -> (2, n_packed, p)."""
        W_input, W_hidden, bias, W_proj = weights
        c_dim, p = W_proj.values.shape[2], W_proj.out_features
        out = x.new_empty(x.shape)
        h, c = x.new_zeros(2, batch_sizes[0], p), x.new_zeros(2, batch_sizes[0], c_dim)
        for first, end in blocks:
            gates_x = int8_baddbmm(bias, x[:, offsets[first] : offsets[end]], W_input)
            for t in range(first, end):
                n, start = batch_sizes[t], offsets[t] - offsets[first]
                gates = int8_baddbmm(gates_x[:, start : start + n], h[:, :n], W_hidden).tanh_()
                sigmoid_gates = gates[:, :, : 3 * c_dim]
                sigmoid_gates.mul_(0.5).add_(0.5)  # sigmoid(x) = 1/2 + tanh(x / 2) / 2
                input_gate, forget_gate, output_gate, new_input = gates.split(c_dim, dim=2)
                c = torch.addcmul(forget_gate * c[:, :n], input_gate, new_input)
                if self.cell_clip:
                    c.clamp_(-self.cell_clip, self.cell_clip)
                h = int8_baddbmm(None, output_gate * torch.tanh(c), W_proj)
                if self.proj_clip:
                    h.clamp_(-self.proj_clip, self.proj_clip)
                out[:, offsets[t] : offsets[t + 1]] = h
        return out

    def _inference_layer(
        self, layer: int, x: torch.Tensor, batch_sizes: List[int], offsets: List[int],
        blocks: List[Tuple[int, int]], scratch: torch.Tensor, weights: InferenceWeights,
        state: Optional[LayerState] = None,
    ) -> torch.Tensor:
        """One layer without gradients, in float32, from the zero state or `state`.

        The same arithmetic as `_step`, with fewer operations a step, in place
        on buffers made once per layer: the gates' product (in either form of
        `inference_weights`), one tanh over every gate (torch's tanh gives the
        same bits in its vector and scalar paths, its sigmoid does not, so a
        token's values do not depend on where its row falls), the sigmoid
        gates' 1/2 + t/2 (t/2 exact), the cell update, the output and the clips
        (on `fused_cell_devices`, one kernel from the pre-activations to the
        cell's output, cell_kernel.py); each step's output is written straight
        into the layer's output, where the next step reads it.
        x: (2, n_packed, p) -> (2, n_packed, p).
        """
        W_input, W_hidden, bias, W_proj = weights
        p, c_dim = W_proj.shape[2], W_proj.shape[1]
        per_gate = W_hidden.shape[0] == 2 * N_GATES
        rows = max(batch_sizes[0], MIN_STEP_ROWS)
        out = x.new_empty(x.shape)
        if state is None:
            h0, c0 = x.new_zeros(2, rows, p), x.new_zeros(2, rows, c_dim)
        else:
            h0, c0 = state
        # In one kernel (cell_kernel.py) the cell is a new tensor each step (`c`),
        # and so is the cell's output: no buffer for it; the eight kernels update
        # c0 in place.
        fused = x.device.type in self.fused_cell_devices and x.dtype == torch.float32
        scale, half = self.gate_scale, x.new_full((), 0.5)
        gates = x.new_empty(2 * N_GATES * rows * c_dim)
        scaled_h = x.new_empty(2 * N_GATES * rows * p) if per_gate else None
        cell_out = None if fused else x.new_empty(2 * rows * c_dim)
        # On a CPU the projection goes into a contiguous buffer, then into the
        # layer's output: MKL computes a product into a strided output one
        # matrix at a time, each cut over the threads (products.py).
        projected = x.new_empty(2 * rows * p) if x.device.type == "cpu" else None
        views: dict = {}  # the buffers' views for m rows, made once per row count

        def views_of(m: int):
            """For m rows: the gates as the product writes them, as one tensor, as
            (input, new input, forget, output), their sigmoid gates' slices; the
            halved hidden state (per gate), the cell and the cell's output."""
            if m not in views:
                g = gates[: 2 * N_GATES * m * c_dim]
                if per_gate:
                    g = g.view(2, N_GATES, m, c_dim)
                    i, j, f, o = g.unbind(1)
                    views[m] = (g.view(2 * N_GATES, m, c_dim), g, (i, j, f, o), (i, g[:, 2:]),
                                scaled_h[: 2 * N_GATES * m * p].view(2, N_GATES, m, p))
                else:
                    g = g.view(2, m, N_GATES * c_dim)
                    i, f, o, j = g.split(c_dim, dim=2)
                    views[m] = (g, g, (i, j, f, o), (g[:, :, : 3 * c_dim],), None)
                views[m] += (c0[:, :m], None if cell_out is None else cell_out[: 2 * m * c_dim].view(2, m, c_dim))
            return views[m]

        cell_clip, proj_clip = self.cell_clip, self.proj_clip
        h, c = h0, c0
        step_outputs = out.split(batch_sizes, dim=1)  # every step's rows, in one call
        for first, end in blocks:
            block_start = offsets[first]
            block_rows = offsets[end] - block_start
            block_x = x[:, block_start : offsets[end]]
            if block_rows < MIN_STEP_ROWS:
                block_x = pad_rows(block_x, 1, MIN_STEP_ROWS)
            n_rows = block_x.shape[1]
            gates_x = scratch[: 2 * N_GATES * n_rows * c_dim]
            if per_gate:  # each gate's product of the input, halved for the sigmoid gates
                gates_x = gates_x.view(2 * N_GATES, n_rows, c_dim)
                torch.baddbmm(bias, torch.mul(block_x.unsqueeze(1), scale).view(2 * N_GATES, n_rows, p), W_input,
                              out=gates_x)
                gates_x = gates_x.view(2, N_GATES, n_rows, c_dim)
                step_inputs = gates_x[:, :, :block_rows].split(batch_sizes[first:end], dim=2)
            else:
                gates_x = gates_x.view(2, n_rows, N_GATES * c_dim)
                torch.baddbmm(bias, block_x, W_input, out=gates_x)
                step_inputs = gates_x[:, :block_rows].split(batch_sizes[first:end], dim=1)
            for t, step_x, step_out in zip(range(first, end), step_inputs, step_outputs[first:end]):
                n = batch_sizes[t]
                m = max(n, MIN_STEP_ROWS)  # see MIN_STEP_ROWS: rows beyond n are dropped
                product, g, gate_views, sigmoid_gates, scaled, cell, cell_out_m = views_of(m)
                input_gate, new_input, forget_gate, output_gate = gate_views
                if n < MIN_STEP_ROWS:
                    step_x = pad_rows(step_x, 2 if per_gate else 1, MIN_STEP_ROWS)
                    h = pad_rows(h[:, :n], 1, MIN_STEP_ROWS)
                elif h.shape[1] != n:
                    h = h[:, :n]
                if per_gate:  # the hidden state once per gate, halved for the sigmoid gates
                    torch.mul(h.unsqueeze(1), scale, out=scaled)
                    torch.baddbmm(step_x.reshape(2 * N_GATES, m, c_dim), scaled.view(2 * N_GATES, m, p), W_hidden,
                                  out=product)
                else:
                    torch.baddbmm(step_x, h, W_hidden, out=product)
                if fused:
                    c, cell_out_m = fused_cell_update(input_gate, forget_gate, output_gate, new_input, c[:, :m],
                                                      cell_clip)
                else:
                    g.tanh_()
                    for sigmoid in sigmoid_gates:  # 1/2 + t/2: t/2 is exact
                        torch.add(half, sigmoid, alpha=0.5, out=sigmoid)
                    cell.mul_(forget_gate)
                    torch.mul(input_gate, new_input, out=cell_out_m)
                    cell.add_(cell_out_m)
                    if cell_clip:
                        cell.clamp_(-cell_clip, cell_clip)
                    torch.tanh(cell, out=cell_out_m)
                    cell_out_m.mul_(output_gate)
                if n < MIN_STEP_ROWS or projected is not None:
                    h = projected[: 2 * m * p].view(2, m, p) if projected is not None else None
                    h = torch.bmm(cell_out_m, W_proj, out=h)
                    if proj_clip:
                        h.clamp_(-proj_clip, proj_clip)
                    step_out.copy_(h[:, :n])
                else:
                    h = step_out
                    torch.bmm(cell_out_m, W_proj, out=h)
                    if proj_clip:
                        h.clamp_(-proj_clip, proj_clip)
        if fused and state is not None:  # the running rows' cell back into the state's
            c0[:, : c.shape[1]].copy_(c)
        return out

    def layer_weights(self, layer: int, dtype: Optional[torch.dtype] = None) -> LayerWeights:
        """W_input, W_hidden and W_proj of `layer`, cast to `dtype` when given.

        Under autocast each product would cast its weights anew, at every time
        step: for the original model 67 MB of W_hidden a step, more than the
        bfloat16 product itself costs. Cast once per call instead, autocast
        leaves them as they are (a differentiable cast: gradients still reach
        the float32 weights).
        """
        weights = self.W_input[layer], self.W_hidden[layer], self.W_proj[layer]
        if dtype is None:
            return weights
        return tuple(w.to(dtype) for w in weights)  # type: ignore[return-value]

    def input_gates(
        self, layer: int, x: torch.Tensor, scratch: Optional[torch.Tensor] = None,
        weights: Optional[LayerWeights] = None,
    ) -> torch.Tensor:
        """The input-to-gate products and biases of many rows in one GEMM.

        x: (2, rows, p) -> (2, 4, rows, c), written into `scratch` (a flat
        buffer of at least that size) when given. weights: the layer's, from
        `layer_weights` (its own parameters when None).
        """
        _, rows, p = x.shape
        if rows < MIN_ROWS:  # see products.py
            return self.input_gates(layer, pad_rows(x, 1), scratch, weights)[:, :, :rows]
        W_input = (weights or self.layer_weights(layer))[0]
        c = W_input.shape[3]
        bias = (self.bias[layer] + self.forget_bias).view(2 * N_GATES, 1, c)
        per_gate_x = x.unsqueeze(1).expand(2, N_GATES, rows, p).reshape(2 * N_GATES, rows, p)
        W = W_input.view(2 * N_GATES, p, c)
        if scratch is None:
            gates = torch.baddbmm(bias, per_gate_x, W)
        else:
            gates = scratch[: 2 * N_GATES * rows * c].view(2 * N_GATES, rows, c)
            torch.baddbmm(bias, per_gate_x, W, out=gates)
        return gates.view(2, N_GATES, rows, c)

    def _step(
        self, layer: int, gates_x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, weights: LayerWeights
    ) -> LayerState:
        """One time step for the n running rows of both directions.

        gates_x: (2, 4, n, c); h: (2, n, p); c: (2, n, c) -> new (h, c).
        """
        n = gates_x.shape[2]
        if n < MIN_ROWS:  # see products.py
            h, c = self._step(layer, pad_rows(gates_x, 2), pad_rows(h, 1), pad_rows(c, 1), weights)
            return h[:, :n], c[:, :n]
        return self.cell(layer, self.gates(layer, gates_x, h, weights), c, weights)

    def gates(
        self, layer: int, gates_x: torch.Tensor, h: torch.Tensor, weights: Optional[LayerWeights] = None
    ) -> torch.Tensor:
        """Every gate's pre-activation: the input's share with the biases
        (gates_x (2, 4, n, c), from `input_gates`) plus the recurrent share
        h (2, n, p) @ W_hidden -> (2, 4, n, c), gates in bilm-tf's order."""
        _, _, n, c_dim = gates_x.shape
        p = h.shape[2]
        W_hidden = (weights or self.layer_weights(layer))[1]
        per_gate_h = h.unsqueeze(1).expand(2, N_GATES, n, p).reshape(2 * N_GATES, n, p)
        gates = torch.baddbmm(
            gates_x.reshape(2 * N_GATES, n, c_dim), per_gate_h, W_hidden.view(2 * N_GATES, p, c_dim)
        )
        return gates.view(2, N_GATES, n, c_dim)

    def cell(
        self, layer: int, gates: torch.Tensor, c: torch.Tensor, weights: Optional[LayerWeights] = None
    ) -> LayerState:
        """The cell update from the gates' pre-activations (2, 4, n, c) and the
        cell c (2, n, c): the new (h (2, n, p), c), each clipped."""
        i, j, f, o = gates.unbind(1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
        if self.cell_clip:
            c = c.clamp(-self.cell_clip, self.cell_clip)
        h = torch.bmm(torch.sigmoid(o) * torch.tanh(c), (weights or self.layer_weights(layer))[2])
        if self.proj_clip:
            h = h.clamp(-self.proj_clip, self.proj_clip)
        return h, c


def parameters_stamp(parameters: Iterable[torch.Tensor]) -> tuple:
    """What changes when any of `parameters` moves or changes in place: each
    one's device, memory and version counter (torch bumps it at each change in
    place: an optimiser's step, ``load_state_dict``, ``copy_``; an edit through
    ``.data`` leaves no trace). Parameters made under inference mode keep no
    counter: they cannot change outside it."""
    return tuple((p.device, p.data_ptr(), 0 if p.is_inference() else p._version) for p in parameters)


def _offsets(batch_sizes: List[int]) -> List[int]:
    """Where each step's rows start in the packed layout, and the end."""
    offsets = [0]
    for n in batch_sizes:
        offsets.append(offsets[-1] + n)
    return offsets


def _input_blocks(offsets: List[int]) -> List[Tuple[int, int]]:
    """Split the steps into runs [first, end) of at most ROWS_PER_INPUT_BLOCK
    packed rows (or one step, if a single step has more)."""
    blocks = []
    first = 0
    n_steps = len(offsets) - 1
    for t in range(1, n_steps + 1):
        if t == n_steps or offsets[t + 1] - offsets[first] > ROWS_PER_INPUT_BLOCK:
            blocks.append((first, t))
            first = t
    return blocks
