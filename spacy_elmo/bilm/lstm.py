"""Stacked LSTMs with a projection, forward and backward computed side by side."""
from typing import List, Optional, Tuple

import torch
from torch import nn

from .options import BiLMOptions

# Per layer: h (2, batch, projection_dim) and c (2, batch, lstm_dim); axis 0 is the direction.
LayerState = Tuple[torch.Tensor, torch.Tensor]


class BiLSTMStack(nn.Module):
    """``n_layers`` LSTM layers with projection for each of two directions.

    Weights keep the bilm-tf layout with a leading direction axis: gates in the
    order (input, new input, forget, output), a forget-gate bias of 1 added at
    run time, the cell clipped to ``cell_clip`` and the projected output to
    ``proj_clip``. Layers above the first add their input to their output when
    ``use_skip_connections`` is set; the recurrent state is the output before
    that addition.

    The backward direction is fed time-reversed sequences, so both directions
    run as one batched recurrence. Rows must come sorted by length, longest
    first: at step t only the rows still running are computed.
    """

    def __init__(self, options: BiLMOptions):
        super().__init__()
        self.n_layers = options.n_layers
        self.cell_clip = options.cell_clip
        self.proj_clip = options.proj_clip
        self.use_skip_connections = options.use_skip_connections
        p, c = options.projection_dim, options.lstm_dim
        self.W_input = nn.ParameterList(nn.Parameter(torch.empty(2, p, 4 * c)) for _ in range(self.n_layers))
        self.W_hidden = nn.ParameterList(nn.Parameter(torch.empty(2, p, 4 * c)) for _ in range(self.n_layers))
        self.bias = nn.ParameterList(nn.Parameter(torch.zeros(2, 4 * c)) for _ in range(self.n_layers))
        self.W_proj = nn.ParameterList(nn.Parameter(torch.empty(2, c, p)) for _ in range(self.n_layers))
        for weights in (*self.W_input, *self.W_hidden, *self.W_proj):
            nn.init.uniform_(weights, -(1.0 / c) ** 0.5, (1.0 / c) ** 0.5)
        forget_bias = torch.zeros(4 * c)
        forget_bias[2 * c : 3 * c] = 1.0
        self.register_buffer("forget_bias", forget_bias, persistent=False)

    def forward(
        self,
        inputs: torch.Tensor,
        lengths: List[int],
        initial_state: Optional[List[LayerState]] = None,
        return_final_state: bool = False,
    ) -> Tuple[List[torch.Tensor], Optional[List[LayerState]]]:
        """Run both directions over every layer.

        inputs: (2, batch, steps, projection_dim); row b of direction 1 holds
            row b of direction 0 reversed over its first lengths[b] steps.
        lengths: the rows' lengths, non-increasing.
        initial_state: per layer (h, c); zeros when None.
        RETURNS: per layer its output (2, batch, steps, projection_dim), zero
            past each row's length; and the final state per layer when asked.
        """
        _, batch, steps, _ = inputs.shape
        running = _rows_running(lengths, steps)
        outputs: List[torch.Tensor] = []
        final_states: List[LayerState] = []
        x = inputs
        for layer in range(self.n_layers):
            bias = (self.bias[layer] + self.forget_bias).unsqueeze(1)  # (2, 1, 4c)
            # The input-to-gate products of all steps in one matrix product.
            gates_x = torch.baddbmm(bias, x.reshape(2, batch * steps, -1), self.W_input[layer])
            gates_x = gates_x.view(2, batch, steps, -1)
            if initial_state is None:
                h = x.new_zeros(2, batch, self.W_proj[layer].shape[2])
                c = x.new_zeros(2, batch, self.W_proj[layer].shape[1])
            else:
                h, c = initial_state[layer]
            out = x.new_zeros(2, batch, steps, h.shape[2])
            final_h, final_c = (h.clone(), c.clone()) if return_final_state else (h, c)
            for t, n in enumerate(running):
                h, c = self._step(gates_x[:, :n, t], h[:, :n], c[:, :n], self.W_hidden[layer], self.W_proj[layer])
                out[:, :n, t] = h
                ending = running[t + 1] if t + 1 < len(running) else 0
                if return_final_state and ending < n:
                    final_h[:, ending:n] = h[:, ending:n]
                    final_c[:, ending:n] = c[:, ending:n]
            if self.use_skip_connections and layer > 0:
                out = out + x
            outputs.append(out)
            final_states.append((final_h, final_c))
            x = out
        return outputs, (final_states if return_final_state else None)

    def _step(
        self,
        gates_x: torch.Tensor,
        h: torch.Tensor,
        c: torch.Tensor,
        W_hidden: torch.Tensor,
        W_proj: torch.Tensor,
    ) -> LayerState:
        """One time step for the n running rows of both directions.

        gates_x: (2, n, 4c); h: (2, n, p); c: (2, n, c) -> new (h, c).
        """
        gates = torch.baddbmm(gates_x, h, W_hidden)
        i, j, f, o = gates.chunk(4, dim=2)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
        if self.cell_clip:
            c = c.clamp(-self.cell_clip, self.cell_clip)
        h = torch.bmm(torch.sigmoid(o) * torch.tanh(c), W_proj)
        if self.proj_clip:
            h = h.clamp(-self.proj_clip, self.proj_clip)
        return h, c


def _rows_running(lengths: List[int], steps: int) -> List[int]:
    """For each step, how many rows (of rows sorted longest first) are still running."""
    running = []
    n = len(lengths)
    for t in range(steps):
        while n and lengths[n - 1] <= t:
            n -= 1
        if not n:
            break
        running.append(n)
    return running
