"""Would a compiled LSTM step pay on a CPU? One step of the inference recurrence, eager against torch.compile.

    python benchmarks/bench_compiled_step.py            # one thread; needs a C++ compiler (inductor)

The eager step is the wide form of the recurrence without gradients
(spacy_elmo/bilm/recurrence/inference.py), its eleven torch calls on buffers
made once: the recurrent product added to the input's, one tanh over the four
gates, the sigmoid gates' 1/2 + t/2, the cell update and its clip, the cell's
output, the projection and its clip. The
compiled step is the same arithmetic written as one function for torch.compile
(inductor fuses the element-wise part into one kernel; the two products stay
library calls), once with a graph per row count (``dynamic=False``) and once
with one graph for every row count (``dynamic=True``). Printed: µs a step (the
best of --repeats runs of --steps steps), compiled/eager, and the largest
difference of the compiled step's output from the eager one's, for the
near-zero biLM's LSTM (8 cells, 8-wide projection; bench_overhead.py) and the
shipped one's (512 cells, 128-wide projection), at 32, 200 and 512 rows.
"""

import argparse
import platform
import subprocess
import time

import torch


def cpu_name() -> str:
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or "unknown CPU"


def eager_step(step_x, h, c, W_hidden, W_proj, product, cell_out, half, clip):
    """As inference.py issues it (wide form, gates ordered i, f, o, j, sigmoid gates pre-halved)."""
    cells = c.shape[2]
    torch.baddbmm(step_x, h, W_hidden, out=product)
    product.tanh_()
    sigmoid = product[:, :, : 3 * cells]
    torch.add(half, sigmoid, alpha=0.5, out=sigmoid)
    i, f, o, j = product.split(cells, dim=2)
    c.mul_(f)
    torch.mul(i, j, out=cell_out)
    c.add_(cell_out)
    c.clamp_(-clip, clip)
    torch.tanh(c, out=cell_out)
    cell_out.mul_(o)
    h = torch.bmm(cell_out, W_proj)
    return h.clamp_(-clip, clip)


def functional_step(step_x, h, c, W_hidden, W_proj, clip: float):
    cells = c.shape[2]
    t = torch.tanh(torch.baddbmm(step_x, h, W_hidden))
    i, f, o = (0.5 + 0.5 * t[:, :, k * cells : (k + 1) * cells] for k in range(3))
    j = t[:, :, 3 * cells :]
    c = torch.clamp(c * f + i * j, -clip, clip)
    return torch.clamp(torch.bmm(torch.tanh(c) * o, W_proj), -clip, clip), c


def timed(fn, steps: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch._dynamo.config.recompile_limit = 64  # a graph per shape with dynamic=False
    torch.manual_seed(0)
    print(f"CPU: {cpu_name()}; torch {torch.__version__}; {args.threads} thread(s)")
    print(
        f"{'LSTM':<22}{'rows':>5}{'eager µs':>10}{'static µs':>11}{'ratio':>7}{'dynamic µs':>12}{'ratio':>7}"
        f"{'largest diff':>14}"
    )
    clip = 3.0
    cases = []
    for name, cells, width in (("near-zero (8, 8)", 8, 8), ("shipped (512, 128)", 512, 128)):
        W_hidden = torch.randn(2, width, 4 * cells) / width**0.5
        W_proj = torch.randn(2, cells, width) / cells**0.5
        for rows in (32, 200, 512):
            cases.append(
                (
                    name,
                    rows,
                    torch.randn(2, rows, 4 * cells),
                    torch.randn(2, rows, width),
                    torch.randn(2, rows, cells),
                    W_hidden,
                    W_proj,
                )
            )
    rows_out = {}
    for name, rows, step_x, h, c, W_hidden, W_proj in cases:
        product, cell_out, half = step_x.new_empty(step_x.shape), c.new_empty(c.shape), c.new_full((), 0.5)
        reference = eager_step(step_x, h, c.clone(), W_hidden, W_proj, product, cell_out, half, clip)
        eager_us = timed(
            lambda: eager_step(step_x, h, c.clone(), W_hidden, W_proj, product, cell_out, half, clip),
            args.steps,
            args.repeats,
        )
        eager_us -= timed(lambda: c.clone(), args.steps, args.repeats)  # the eager step updates c in place
        rows_out[name, rows] = [reference, eager_us, 0.0]
    for dynamic in (False, True):  # each its own cache of graphs
        torch._dynamo.reset()
        compiled = torch.compile(functional_step, dynamic=dynamic)
        for name, rows, step_x, h, c, W_hidden, W_proj in cases:
            out, _ = compiled(step_x, h, c, W_hidden, W_proj, clip)  # compiles
            row = rows_out[name, rows]
            row.append(timed(lambda: compiled(step_x, h, c, W_hidden, W_proj, clip), args.steps, args.repeats))
            row[2] = max(row[2], float((out - row[0]).abs().max()))
    for (name, rows), (_, eager_us, difference, static_us, dynamic_us) in rows_out.items():
        print(
            f"{name:<22}{rows:>5}{eager_us:>10.1f}{static_us:>11.1f}{static_us / eager_us:>7.2f}"
            f"{dynamic_us:>12.1f}{dynamic_us / eager_us:>7.2f}{difference:>14.1e}"
        )


if __name__ == "__main__":
    with torch.no_grad():  # as at inference
        main()
