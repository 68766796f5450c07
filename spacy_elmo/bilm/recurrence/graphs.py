"""The inference recurrence replayed from CUDA graphs, a few steps at a time.

Without gradients, in float32, `BiLSTMStack` runs a step as about a dozen
torch operations a layer, each a kernel launch queued from Python: on a GPU a
batch then takes as long as the host needs to queue it, however little the
GPU has to do. A CUDA graph records the launches once and replays them with
one call.

A graph runs fixed shapes, so a batch runs as chunks of `CHUNK_STEPS` steps,
each chunk a replay of the graph of its number of rows: the rows still running
at the chunk's first step, rounded up to a `bucket` size. The graph runs every
layer over the chunk's steps (`inference.run_layers`, the eager path's own
code, every step that many rows wide), from the state the previous chunk left,
copied in for the rows that go on, or from zeros for a batch's first chunk.
Rows that hold no token at a step (their sentence ended within the chunk, or
the rounding added them) run on scratch: rows are sorted longest first and a
row's recurrence reads only its own earlier steps, so every token gets the
values of the packed layout. The chunks compute a little more than the packed
layout (a sentence's last chunk runs to its end: an eighth more rows on the
benchmark's tweets and review snippets, `bench_overhead.py --chunk-rows`), and
the graphs of a run are those of the few row counts it meets. On a
GPU the products of a wider step may round differently (cuBLAS chooses kernels
by shape): the values agree with the eager path's within float32 rounding, not
bit for bit.

The graphs read the weights from buffers of their own, made once in the form
the recurrence takes them (`weight_forms.inference_weights`) and made again when
a parameter moves or changes in place (its memory or version counter; an edit
through ``.data`` leaves no trace: call `BiLM.clear_token_cache` after one).

Off unless asked for (`BiLM.use_cuda_graphs`, the ``cuda_graphs`` setting of
`spacy-elmo.BiLM.v1`): each graph holds GPU memory of its own (a chunk's input,
every layer's output, the states and the step buffers, in proportion to its
rows), and a new row count is captured once (a chunk's eager run on a side
stream, then the capture, and a synchronisation). At most ``max_graphs`` are
kept, the least recently used dropped first; a graph is captured for the
arithmetic (TF32 or not) and the device it saw.
"""

import gc
import threading
from collections import OrderedDict
from contextlib import nullcontext
from typing import List, NamedTuple, Optional, Tuple

import numpy
import torch

from ...device import to_device
from ...errors import ConfigError
from .inference import run_layers
from .layout import LayerState, step_offsets
from .weight_forms import InferenceWeights, Stack, parameters_stamp

# The steps a graph runs: fewer, less scratch after each sentence's end; more,
# fewer replays and copies between them (`bench_overhead.py --chunk-rows`).
CHUNK_STEPS = 4


def bucket(n: int) -> int:
    """The row count of the graph that runs `n` rows: the smallest of 8, 12,
    16, 24, 32, 48 … (powers of two and one and a half times them, from
    MIN_STEP_ROWS up) that holds them, so at most a third of its rows are added."""
    size = 8
    while size < n:
        size = size * 3 // 2 if size & (size - 1) == 0 else size * 4 // 3
    return size


class ChunkLayout(NamedTuple):
    """How a batch runs in chunks of `steps` steps (`chunk_layout`).

    rows: rows[q], the bucketed row count of chunk q (steps ``q * steps`` to
        ``(q + 1) * steps - 1``).
    index: (n_packed,), each packed row's position in its chunk's
        ``steps x rows[q]`` input, flattened step after step: step t's row j at
        ``(t - q * steps) * rows[q] + j``.
    """

    rows: List[int]
    index: numpy.ndarray


def chunk_layout(batch_sizes: List[int], steps: int = CHUNK_STEPS) -> ChunkLayout:
    """Each chunk's rows, and where each packed row lies in its chunk's input."""
    sizes = numpy.asarray(batch_sizes, dtype=numpy.int64)
    rows = [bucket(int(n)) for n in sizes[::steps]]
    step = numpy.repeat(numpy.arange(len(sizes), dtype=numpy.int64), sizes)
    row = numpy.arange(len(step), dtype=numpy.int64) - numpy.repeat(numpy.cumsum(sizes) - sizes, sizes)
    chunk_rows = numpy.asarray(rows, dtype=numpy.int64)[step // steps]
    return ChunkLayout(rows, (step % steps) * chunk_rows + row)


class _Graph:
    """The recurrence of every layer over `CHUNK_STEPS` steps of `rows` rows,
    captured: its input, states and outputs are its own buffers. (Off a GPU,
    for the tests, the same buffers and calls with the recurrence run eagerly.)

    It holds no reference to the stack, so that it is freed as soon as it is
    dropped: a graph freed by Python's cycle collector in the middle of another
    graph's capture would end that capture with an error."""

    def __init__(self, stack: Stack, weights: List[InferenceWeights], rows: int, device: torch.device):
        p, c = stack.W_proj[0].shape[2], stack.W_proj[0].shape[1]
        self.rows = rows
        self.weights = weights
        # Normal tensors even under inference mode, so that a call outside it may write them.
        with torch.inference_mode(False), torch.no_grad():
            self.inputs = torch.zeros(2, CHUNK_STEPS * rows, p, device=device)
            self.states: List[LayerState] = [
                (torch.zeros(2, rows, p, device=device), torch.zeros(2, rows, c, device=device))
                for _ in range(stack.n_layers)
            ]
            self.graph: Optional[torch.cuda.CUDAGraph] = None
            if device.type == "cuda":
                self._capture(stack, device)
            else:
                self.outputs = self._run(stack)

    def _capture(self, stack: Stack, device: torch.device) -> None:
        # A warm-up on a side stream first, as CUDA graphs need (cuBLAS's workspaces, lazy set-up).
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            self._run(stack)
        torch.cuda.current_stream(device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        collecting = gc.isenabled()
        gc.disable()  # nothing freed during the capture (`torch.cuda.graph` collects first)
        try:
            with torch.cuda.graph(self.graph):
                self.outputs = self._run(stack)
        finally:
            if collecting:
                gc.enable()

    def _run(self, stack: Stack) -> List[torch.Tensor]:
        return run_layers(stack, self.inputs, [self.rows] * CHUNK_STEPS, self.weights, self.states)

    def replay(self, stack: Stack) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.outputs = self._run(stack)

    def start_from(self, previous: Optional["_Graph"]) -> None:
        """The states: zeros for a batch's first chunk, else the previous chunk's
        final states for the rows that go on (already in place when the previous
        chunk ran this graph)."""
        if previous is None:
            for h, c in self.states:
                h.zero_()
                c.zero_()
        elif previous is not self:
            for (h, c), (previous_h, previous_c) in zip(self.states, previous.states):
                h.copy_(previous_h[:, : self.rows])
                c.copy_(previous_c[:, : self.rows])


class RecurrenceGraphs:
    """`BiLSTMStack`'s inference recurrence from CUDA graphs (see the module's docstring).

    One call at a time: the graphs' buffers are shared between calls, so calls
    from several threads take turns. A copy (``copy.deepcopy``, as Thinc's
    ``Model.copy`` and ``nlp.replace_listeners`` make) or a pickle keeps the
    setting and none of the graphs: they hold their own GPU memory and addresses.
    """

    def __init__(self, max_graphs: int = 16):
        if isinstance(max_graphs, bool) or not isinstance(max_graphs, int) or max_graphs < 1:
            raise ConfigError("E106", found=repr(max_graphs))
        self.max_graphs = max_graphs
        self._graphs: "OrderedDict[Tuple, _Graph]" = OrderedDict()
        self._weights: List[InferenceWeights] = []  # made at the first call
        self._stamp: Optional[Tuple] = None  # the parameters' memory and versions the weights were made from
        self.captures = 0  # how many graphs were captured: new row counts, arithmetic or device
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"max_graphs": self.max_graphs}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_graphs"])  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._graphs)

    def forget_weights(self) -> None:
        """Make the weights' buffers again at the next call."""
        self._stamp = None

    def __call__(self, stack: Stack, inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
        """Every layer's packed output (2, n_packed, p), as `inference.run_layers`
        gives it; inputs float32 on a CUDA device."""
        with self._lock, torch.cuda.device(inputs.device) if inputs.is_cuda else nullcontext():
            return self._run(stack, inputs, batch_sizes)

    def _run(self, stack: Stack, inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
        weights = self._weights_for(stack, inputs.device)
        rows, index = chunk_layout(batch_sizes)
        index = to_device(index, inputs.device)
        offsets = step_offsets(batch_sizes)
        # A graph is captured for the device and arithmetic it saw.
        kind = (inputs.device, torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
        pieces: List[List[torch.Tensor]] = [[] for _ in range(stack.n_layers)]
        previous = None
        for q, n_rows in enumerate(rows):
            graph = self._graph(stack, weights, n_rows, kind)
            start, end = offsets[q * CHUNK_STEPS], offsets[min((q + 1) * CHUNK_STEPS, len(batch_sizes))]
            graph.start_from(previous)
            graph.inputs.index_copy_(1, index[start:end], inputs[:, start:end])
            graph.replay(stack)
            for layer, out in enumerate(graph.outputs):  # copied out before a replay overwrites them
                pieces[layer].append(torch.index_select(out, 1, index[start:end]))
            previous = graph
        return [layer[0] if len(layer) == 1 else torch.cat(layer, dim=1) for layer in pieces]

    def _weights_for(self, stack: Stack, device: torch.device) -> List[InferenceWeights]:
        stamp = (device, parameters_stamp(stack.parameters()))
        if stamp == self._stamp:
            return self._weights
        with torch.inference_mode(False), torch.no_grad():
            made = [stack.inference_weights(layer) for layer in range(stack.n_layers)]
            if not self._weights or self._weights[0][0].device != device:
                self._graphs.clear()  # they read the buffers they were captured with
                self._weights = [InferenceWeights(*(w.clone() for w in layer)) for layer in made]
            else:
                for buffers, layer in zip(self._weights, made):
                    for buffer, w in zip(buffers, layer):
                        buffer.copy_(w)
        self._stamp = stamp
        return self._weights

    def _graph(self, stack: Stack, weights: List[InferenceWeights], rows: int, kind: Tuple) -> _Graph:
        key = (rows, *kind)
        graph = self._graphs.get(key)
        if graph is None:
            graph = _Graph(stack, weights, rows, kind[0])
            self.captures += 1
            self._graphs[key] = graph
            while len(self._graphs) > self.max_graphs:
                self._graphs.popitem(last=False)
        else:
            self._graphs.move_to_end(key)
        return graph
