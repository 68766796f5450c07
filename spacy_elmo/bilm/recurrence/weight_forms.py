"""The stack's weights in the form each path of the recurrence takes them.

`BiLSTMStack` holds bilm-tf's weights with a leading direction axis and one matrix per gate
(``W_input[l]``, ``W_hidden[l]`` (2, 4, p, c), ``bias[l]`` (2, 4, c), ``W_proj[l]`` (2, c, p)):

- `layer_weights`: as they are, or cast once per call under autocast (the step-by-step path);
- `inference_weights`: the recurrence without gradients' (inference.py, graphs.py), wide or per gate;
- `int8_weights`: the wide form quantised (quantized.py), made once per version of the parameters;
- `Stack`: what the paths read from a `BiLSTMStack` (stack.py), which they take as a `Stack` and never import.
"""

from typing import Dict, Iterable, Iterator, NamedTuple, Optional, Protocol, Tuple

import torch
from torch import nn

from ..int8 import Int8Weight, quantize_weight
from .layout import N_GATES
from .paths import RecurrencePaths

# `inference_weights` on `RecurrencePaths.per_gate_devices`: LSTMs of at least
# this many cells take one product per gate from their weights as they are;
# smaller ones, one wide product from a copy of the weights.
PER_GATE_MIN_CELLS = 512


class LayerWeights(NamedTuple):
    """A layer's weights as the step-by-step products take them (`layer_weights`)."""

    W_input: torch.Tensor
    W_hidden: torch.Tensor
    W_proj: torch.Tensor


class InferenceWeights(NamedTuple):
    """A layer's weights as the recurrence without gradients takes them (`inference_weights`)."""

    W_input: torch.Tensor
    W_hidden: torch.Tensor
    bias: torch.Tensor
    W_proj: torch.Tensor


class Int8LayerWeights(NamedTuple):
    """A layer's weights as the int8 recurrence takes them (`int8_weights`): W_hidden in the wide form."""

    W_input: Int8Weight
    W_hidden: Int8Weight
    bias: torch.Tensor
    W_proj: Int8Weight


class Int8Cache(Dict[int, Tuple[tuple, Int8LayerWeights]]):
    """Per layer: (the parameters' `parameters_stamp`, their int8 form). A copy or a
    pickle of its stack starts empty and makes its own (oneDNN's packed weights
    cannot be copied, and are made again in milliseconds)."""

    def __deepcopy__(self, memo) -> "Int8Cache":
        return Int8Cache()

    def __reduce__(self):
        return Int8Cache, ()


class Stack(Protocol):
    """What the paths of the recurrence read from the `BiLSTMStack` they run
    (its settings, parameters and buffers are described there)."""

    n_layers: int
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    use_skip_connections: bool
    paths: RecurrencePaths
    W_input: nn.ParameterList  # per layer (2, 4, p, c)
    W_hidden: nn.ParameterList  # per layer (2, 4, p, c)
    bias: nn.ParameterList  # per layer (2, 4, c)
    W_proj: nn.ParameterList  # per layer (2, c, p)
    forget_bias: torch.Tensor  # (4, c): 1 for the forget gate
    wide_gate_order: torch.Tensor  # the gates' order in `inference_weights`' wide form
    gate_scale: torch.Tensor  # (1, 4, 1, 1): 1/2 for the sigmoid gates, 1 for the new input

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...

    def inference_weights(self, layer: int) -> InferenceWeights:
        """`inference_weights` of `layer`."""
        ...

    def int8_weights(self, layer: int) -> Int8LayerWeights:
        """`int8_weights` of `layer`, made once per version of its parameters."""
        ...


def parameters_stamp(parameters: Iterable[torch.Tensor]) -> tuple:
    """What changes when any of `parameters` moves or changes in place: each
    one's device, memory and version counter (torch bumps it at each change in
    place: an optimiser's step, ``load_state_dict``, ``copy_``; an edit through
    ``.data`` leaves no trace). Parameters made under inference mode keep no
    counter: they cannot change outside it."""
    return tuple((p.device, p.data_ptr(), 0 if p.is_inference() else p._version) for p in parameters)


def layer_weights(stack: Stack, layer: int, dtype: Optional[torch.dtype] = None) -> LayerWeights:
    """W_input, W_hidden and W_proj of `layer`, cast to `dtype` when given.

    Under autocast each product would cast its weights anew, at every time
    step: for the original model 67 MB of W_hidden a step, more than the
    bfloat16 product itself costs. Cast once per call instead, autocast
    leaves them as they are (a differentiable cast: gradients still reach
    the float32 weights).
    """
    weights = LayerWeights(stack.W_input[layer], stack.W_hidden[layer], stack.W_proj[layer])
    if dtype is None:
        return weights
    return LayerWeights(*(w.to(dtype) for w in weights))


def inference_weights(stack: Stack, layer: int) -> InferenceWeights:
    """`layer`'s weights as the recurrence without gradients takes them. Each
    gate's pre-activation comes out halved for the sigmoid gates (exact: a
    power of two), so that one tanh activates every gate, then sigmoid(x) =
    1/2 + tanh(x / 2) / 2. Two forms:

    - wide: the four gates' weights side by side, (2, p, 4 * c) each,
      ordered (input, forget, output, new input) so that the sigmoid gates
      are contiguous, the sigmoid gates' weights halved: one product per
      direction, from a copy made here.
    - per gate, on `per_gate_devices` for LSTMs of PER_GATE_MIN_CELLS cells
      or more: W_input and W_hidden as they are, one (p, c) matrix per
      direction and gate in bilm-tf's order, (8, p, c) views of the
      parameters; the products take the input and the hidden state halved
      for the sigmoid gates instead. For large LSTMs on a CPU the copy (128
      MiB of fresh memory a layer and call for the original model) costs more
      than the per-gate products lose to the wide one.

    Either way the biases come with the forget gate's 1 added and the
    sigmoid gates' halved, (2, 1, 4 * c) or (8, 1, c); W_proj (2, c, p).
    """
    p, c_dim = stack.W_proj[layer].shape[2], stack.W_proj[layer].shape[1]
    if stack.W_proj[layer].device.type not in stack.paths.per_gate_devices or c_dim < PER_GATE_MIN_CELLS:
        return wide_weights(stack, layer)
    bias = (stack.bias[layer] + stack.forget_bias) * stack.gate_scale[:, :, :, 0]
    return InferenceWeights(
        stack.W_input[layer].view(2 * N_GATES, p, c_dim),
        stack.W_hidden[layer].view(2 * N_GATES, p, c_dim),
        bias.view(2 * N_GATES, 1, c_dim),
        stack.W_proj[layer],
    )


def wide_weights(stack: Stack, layer: int) -> InferenceWeights:
    """`inference_weights`' wide form of `layer`'s weights."""
    return InferenceWeights(
        wide_matrix(stack, stack.W_input[layer]),
        wide_matrix(stack, stack.W_hidden[layer]),
        wide_bias(stack, layer),
        stack.W_proj[layer],
    )


def wide_matrix(stack: Stack, w: torch.Tensor) -> torch.Tensor:
    """A gate matrix (2, 4, p, c) in the wide form (2, p, 4 * c): the gates in
    `wide_gate_order`, the sigmoid gates' halved."""
    _, _, p, c_dim = w.shape
    # Reordered and scaled by buffers on the device: an index or a scale copied
    # from a host list would make the host wait for the GPU.
    order, scale = stack.wide_gate_order, stack.gate_scale.index_select(1, stack.wide_gate_order)
    out = w.new_empty(2, p, N_GATES, c_dim)
    torch.mul(w.index_select(1, order), scale, out=out.permute(0, 2, 1, 3))
    return out.view(2, p, N_GATES * c_dim)


def wide_bias(stack: Stack, layer: int) -> torch.Tensor:
    """`layer`'s biases in the wide form (2, 1, 4 * c), the forget gate's 1 added."""
    order = stack.wide_gate_order
    scale = stack.gate_scale.index_select(1, order)
    bias = stack.bias[layer] + stack.forget_bias
    return (bias.index_select(1, order) * scale[:, :, :, 0]).view(2, 1, -1)


def int8_weights(stack: Stack, layer: int, cache: Int8Cache) -> Int8LayerWeights:
    """`layer`'s weights as the int8 recurrence takes them: the wide form of
    `inference_weights` with W_input, W_hidden and W_proj quantised per output
    column (int8.py), the bias as it is. Made once per version of the layer's
    parameters: kept in `cache` under their `parameters_stamp`, made again
    after ``to(...)`` or any change."""
    parameters = (stack.W_input[layer], stack.W_hidden[layer], stack.bias[layer], stack.W_proj[layer])
    stamp = parameters_stamp(parameters)
    cached = cache.get(layer)
    if cached is None or cached[0] != stamp:
        with torch.no_grad():  # one float32 wide matrix at a time: the peak memory stays low
            made = Int8LayerWeights(
                quantize_weight(wide_matrix(stack, stack.W_input[layer])),
                quantize_weight(wide_matrix(stack, stack.W_hidden[layer])),
                wide_bias(stack, layer),
                quantize_weight(stack.W_proj[layer]),
            )
        cached = stamp, made
        cache[layer] = cached
    return cached[1]
