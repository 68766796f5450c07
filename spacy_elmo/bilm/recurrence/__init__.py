"""The biLM's stacked LSTMs (`BiLSTMStack`), one module per way of running them.

- stack.py: the parameters, and `BiLSTMStack.forward`, which chooses the path for a call;
- paths.py: `RecurrencePaths`, the stack's choice where several paths compute the same values;
- layout.py: the packed time-major layout every path runs on;
- weight_forms.py: the weights in the form each path takes them, and `Stack`, what the paths read from the stack;
- step.py: step by step under autograd (the reference), and every case the others leave out;
- backward.py: a layer under autograd with its backward pass written out (training);
- torch_lstm.py: a layer without clipping as `torch.nn.LSTM` (cuDNN on a GPU, training);
- inference.py: without gradients, in place on buffers made once per layer (cell_kernel.py on a GPU);
- graphs.py: the same replayed from CUDA graphs;
- quantized.py: without gradients with int8 products (CPU).
"""

from .graphs import RecurrenceGraphs
from .layout import LayerState
from .paths import RecurrencePaths
from .stack import BiLSTMStack

__all__ = ["BiLSTMStack", "LayerState", "RecurrenceGraphs", "RecurrencePaths"]
