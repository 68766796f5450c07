"""The straightforward biLM computation, step by step, for checking and timing.

This is the textbook form of the model: boundaries added to the id tensor, the
char CNN over all ``max_characters_per_token`` positions of every slot
(padding included), no cache, and one direction at a time with the
input-to-gate product inside the time loop. `BiLM.forward` must agree with it.
It runs in the model's dtype: on a float64 copy of a model it gives the values
that float32 computations approximate.

It is a second implementation of the LSTM step on purpose (recurrence/ holds
the ones the model runs): an oracle has to be written independently of what it
checks. It ships in the package, not under tests/, because the benchmarks
(`benchmarks/bench_bilm.py`, `bench_bilm_gpu.py`) and their README use it
too, and anyone can run it to check the model on their own hardware; it is
never imported by the model itself.
"""

import torch

from .model import BiLM


@torch.no_grad()
def reference_layers(model: BiLM, char_ids: torch.Tensor) -> torch.Tensor:
    """char_ids: (batch, tokens, max_chars) -> (n_layers + 1, batch, tokens, 2 * projection_dim)."""
    opts = model.options
    enc = model.token_encoder
    batch, n_tokens, max_chars = char_ids.shape
    dtype, device = enc.char_embed.dtype, enc.char_embed.device
    char_ids = char_ids.to(device)
    mask = char_ids[:, :, 0] > 0
    lengths = mask.sum(dim=1) + 2
    ids = torch.zeros(batch, n_tokens + 2, max_chars, dtype=torch.long, device=device)
    for b in range(batch):
        n = int(lengths[b]) - 2
        ids[b, 0] = model.boundary_ids[0]
        ids[b, 1 : n + 1] = char_ids[b, :n]
        ids[b, n + 1] = model.boundary_ids[1]
    seq_mask = (ids[:, :, 0] > 0).to(dtype)[:, :, None]
    # Token representation over all 50 positions.
    flat = ids.view(-1, max_chars)
    embedded = torch.nn.functional.embedding(flat, enc.char_embed).transpose(1, 2)
    pooled = [conv(embedded).max(dim=2).values for conv in enc.convs]
    x = enc.activation(torch.cat(pooled, dim=1))
    for highway in enc.highways:
        gate = torch.sigmoid(x @ highway.W_carry + highway.b_carry)
        x = gate * torch.relu(x @ highway.W_transform + highway.b_transform) + (1 - gate) * x
    x = enc.projection(x).view(batch, n_tokens + 2, -1) * seq_mask
    layers = [torch.cat([x, x], dim=2)]
    inputs = [x, x]
    lstm = model.lstm
    c_dim = opts.lstm_dim
    for layer in range(opts.n_layers):
        outputs = []
        for d in range(2):
            # The model keeps one matrix per gate; here they sit side by side.
            W_x = torch.cat(list(lstm.W_input[layer][d]), dim=1)  # (p, 4c)
            W_h = torch.cat(list(lstm.W_hidden[layer][d]), dim=1)
            bias, W_p = lstm.bias[layer][d].reshape(-1), lstm.W_proj[layer][d]
            h = torch.zeros(batch, opts.projection_dim, dtype=dtype, device=device)
            c = torch.zeros(batch, c_dim, dtype=dtype, device=device)
            out = torch.zeros(batch, n_tokens + 2, opts.projection_dim, dtype=dtype, device=device)
            steps = range(n_tokens + 2) if d == 0 else reversed(range(n_tokens + 2))
            for t in steps:
                gates = inputs[d][:, t] @ W_x + h @ W_h + bias
                i, j, f, o = gates.split(c_dim, dim=1)
                new_c = torch.sigmoid(f + 1.0) * c + torch.sigmoid(i) * torch.tanh(j)
                if opts.cell_clip:
                    new_c = new_c.clamp(-opts.cell_clip, opts.cell_clip)
                new_h = (torch.sigmoid(o) * torch.tanh(new_c)) @ W_p
                if opts.proj_clip:
                    new_h = new_h.clamp(-opts.proj_clip, opts.proj_clip)
                live = seq_mask[:, t]
                h = live * new_h + (1 - live) * h
                c = live * new_c + (1 - live) * c
                out[:, t] = live * new_h
            if opts.use_skip_connections and layer > 0:
                out = out + inputs[d]
            outputs.append(out)
        inputs = outputs
        layers.append(torch.cat(outputs, dim=2))
    stacked = torch.stack(layers)[:, :, 1 : n_tokens + 1]
    return stacked * mask[None, :, :, None].to(dtype)
