"""Why bench_overhead's eager rows gain less than overlap.py's: one torch thread, and eager runs after
CUDA graphs were captured and dropped; the host's cost of a launch of the cell kernel against torch's tanh."""
import json, sys, time
import torch, spacy
sys.path.insert(0, "tests/bilm")
from spacy_elmo.bilm import BiLM, length_sorted_batches
from spacy_elmo.bilm.cell_kernel import fused_cell_update
from spacy_elmo.bilm.lstm import BiLSTMStack
from spacy_elmo.bilm.precision import precision
from spacy_elmo.device import copied_to_host, to_host
from test_gpu import original_model

torch.set_num_threads(1)
texts = json.load(open(".gpu/texts.json"))
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
sents = [[t.text for t in s] for d in nlp.pipe(texts) for s in d.sents]
n_tokens = sum(map(len, sents))

g = torch.randn(2, 8, 256, device="cuda"); c = torch.randn(2, 8, 64, device="cuda")
views = [g[:, :, k * 64:(k + 1) * 64] for k in range(4)]
for name, fn in [("cell kernel", lambda: fused_cell_update(*views, c, 3.0)), ("torch.tanh", lambda: torch.tanh(c)),
                 ("torch.mul out", lambda: torch.mul(views[0], views[3], out=c))]:
    for _ in range(100): fn()
    torch.cuda.synchronize(); start = time.perf_counter()
    for _ in range(3000): fn()
    host = (time.perf_counter() - start) / 3000 * 1e6
    torch.cuda.synchronize(); total = (time.perf_counter() - start) / 3000 * 1e6
    print(f"{name}: host {host:.1f} us a launch, {total:.1f} us a launch with the GPU's", flush=True)

def passes(model, batches, behind):
    def run():
        model.clear_token_cache()
        with torch.inference_mode(), precision("cuda", "tf32"):
            if behind:
                for _ in copied_to_host(model.encode_words(b) for b in batches): pass
            else:
                for b in batches: to_host(model.encode_words(b))
    return run

def best(run, repeats=3):
    run(); torch.cuda.synchronize(); times = []
    for _ in range(repeats):
        start = time.perf_counter(); run(); torch.cuda.synchronize(); times.append(time.perf_counter() - start)
    return min(times) / n_tokens * 1e6

def sized(n):
    return [[sents[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sents], n)]

print("| model | batch | state | cell | copy | µs/token |\n| --- | ---: | --- | --- | --- | ---: |")
for name in ("original", "shipped"):
    model = (original_model() if name == "original" else BiLM.from_allennlp("elmo-en-small")).cuda().eval()
    for state in ("fresh", "after graphs"):
        for size in (512, 128):
            for fused in (False, True):
                BiLSTMStack.fused_cell_devices = ("cuda",) if fused else ()
                for behind in (False, True):
                    us = best(passes(model, sized(size), behind))
                    print(f"| {name} | {size} | {state} | {'one' if fused else 'eight'} | "
                          f"{'behind' if behind else 'waited'} | {us:.2f} |", flush=True)
        BiLSTMStack.fused_cell_devices = ("cuda",)
        model.use_cuda_graphs(True); passes(model, sized(32), True)(); passes(model, sized(128), True)()
        model.use_cuda_graphs(False)
    del model; torch.cuda.empty_cache()
