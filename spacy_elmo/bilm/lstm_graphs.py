"""The inference recurrence replayed from CUDA graphs, one graph per bucket of batch shapes.

Without gradients, in float32, `BiLSTMStack` runs a step as about a dozen
torch operations a layer, each a kernel launch queued from Python: on a GPU a
batch then takes as long as the host needs to queue it, however little the
GPU has to do. A CUDA graph records the launches of the whole recurrence once
and replays them with one call.

A graph runs fixed shapes, so batches are laid out in a rectangle of
``steps x rows`` (both rounded up to a `BUCKETS` size): every sentence starts
at step 0 and runs on into rows of scratch past its end; a row that no sentence
holds runs on scratch from start to end. Both directions' inputs already start
each sentence at step 0 (the backward one reversed over the sentence's own
length), and a row's recurrence reads only its own earlier steps, so what is
kept of each row is the packed layout's values: the graph runs the same
`BiLSTMStack._inference` as the eager path, with every step ``rows`` wide. On a
GPU the products of a wider step may round differently (cuBLAS chooses kernels
by shape): the values agree with the eager path's within float32 rounding, not
bit for bit.

Off unless asked for (`BiLM.use_cuda_graphs`, the ``cuda_graphs`` setting of
`spacy-elmo.BiLM.v1`): each graph holds its own GPU memory (its input, every
layer's output and the step buffers of its shape, a few hundred MiB for the
original model at 512 rows), and a new shape is captured once (about as long
as the eager run, and a synchronisation). The graphs of at most
``max_graphs`` shapes are kept, the least recently used dropped first. A graph
is captured for the weights' memory, arithmetic (TF32 or not) and device it
saw, and a change of any of them captures a new one.
"""
from collections import OrderedDict
from typing import TYPE_CHECKING, List, Tuple

import numpy
import torch

from ..device import to_device
from ..errors import ConfigError

if TYPE_CHECKING:
    from .lstm import BiLSTMStack

# The sizes a rectangle's steps and rows are rounded up to: powers of two and
# one and a half times them, so at most a third of a rectangle is scratch.
BUCKETS = sorted({b for k in range(3, 20) for b in (2 ** k, 3 * 2 ** (k - 1))})


def bucket(n: int) -> int:
    """The smallest of `BUCKETS` that holds `n`."""
    for size in BUCKETS:
        if size >= n:
            return size
    raise ValueError(f"{n} is more than the largest bucket, {BUCKETS[-1]}")


def rectangle_index(batch_sizes: List[int], rows: int) -> numpy.ndarray:
    """Where each packed row lies in a ``steps x rows`` rectangle, flattened
    step after step: step t's rows ``0 .. batch_sizes[t] - 1`` at
    ``t * rows + 0 ..``."""
    sizes = numpy.asarray(batch_sizes, dtype=numpy.int64)
    starts = numpy.arange(len(sizes), dtype=numpy.int64) * rows
    # Each packed row's offset within its step: its position less its step's first position.
    first = numpy.repeat(numpy.cumsum(sizes) - sizes, sizes)
    return numpy.repeat(starts, sizes) + numpy.arange(int(sizes.sum()), dtype=numpy.int64) - first


class _Graph:
    """One captured recurrence: its input rectangle, every layer's output rectangle."""

    def __init__(self, stack: "BiLSTMStack", steps: int, rows: int, device: torch.device):
        p = stack.W_proj[0].shape[2]
        batch_sizes = [rows] * steps
        # Normal tensors even under inference mode, so that a call outside it may write the input.
        with torch.inference_mode(False), torch.no_grad():
            self.inputs = torch.zeros(2, steps * rows, p, device=device)
            # A warm-up on a side stream first, as CUDA graphs need (cuBLAS's workspaces, lazy set-up).
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                stack._inference(self.inputs, batch_sizes)
            torch.cuda.current_stream(device).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.outputs = stack._inference(self.inputs, batch_sizes)

    def run(self, inputs: torch.Tensor, index: torch.Tensor) -> List[torch.Tensor]:
        self.inputs.index_copy_(1, index, inputs)
        self.graph.replay()
        # Copied out before the next replay overwrites them.
        return [torch.index_select(out, 1, index) for out in self.outputs]


class RecurrenceGraphs:
    """`BiLSTMStack`'s inference recurrence from CUDA graphs (see the module's docstring)."""

    def __init__(self, max_graphs: int = 8):
        if isinstance(max_graphs, bool) or not isinstance(max_graphs, int) or max_graphs < 1:
            raise ConfigError("E106", found=repr(max_graphs))
        self.max_graphs = max_graphs
        self._graphs: "OrderedDict[Tuple, _Graph]" = OrderedDict()
        self.captures = 0  # how many graphs were captured: new shapes, weights or arithmetic

    def __len__(self) -> int:
        return len(self._graphs)

    def clear(self) -> None:
        self._graphs.clear()

    def __call__(self, stack: "BiLSTMStack", inputs: torch.Tensor, batch_sizes: List[int]) -> List[torch.Tensor]:
        """Every layer's packed output (2, n_packed, p), as `BiLSTMStack._inference` gives it."""
        rows = bucket(max(batch_sizes[0], 8))
        steps = bucket(len(batch_sizes))
        key = (
            steps, rows, inputs.device,
            tuple(p.data_ptr() for p in stack.parameters()),
            torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision(),
        )
        graph = self._graphs.get(key)
        if graph is None:
            graph = _Graph(stack, steps, rows, inputs.device)
            self.captures += 1
            self._graphs[key] = graph
            while len(self._graphs) > self.max_graphs:
                self._graphs.popitem(last=False)
        else:
            self._graphs.move_to_end(key)
        index = to_device(rectangle_index(batch_sizes, rows), inputs.device)
        return graph.run(inputs, index)
