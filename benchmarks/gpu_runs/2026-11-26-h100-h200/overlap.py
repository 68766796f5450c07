"""The original biLM in TF32 on all the texts: µs a token with each batch's copy to the host waited
for at once (to_host) or one batch behind (copied_to_host), the cell in eight kernels or one, eager and
from CUDA graphs; then the GPU's busy time a token (torch.profiler) at batch 512, eight kernels and one."""
import json, sys, time
import torch, spacy
sys.path.insert(0, "tests/bilm")
from spacy_elmo.bilm import length_sorted_batches
from spacy_elmo.bilm.lstm import BiLSTMStack
from spacy_elmo.bilm.precision import precision
from spacy_elmo.device import copied_to_host, to_host
from test_gpu import original_model
from torch.profiler import profile, ProfilerActivity

texts = json.load(open(".gpu/texts.json"))
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
sents = [[t.text for t in s] for d in nlp.pipe(texts) for s in d.sents]
n_tokens = sum(map(len, sents))
model = original_model().cuda().eval()
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {len(sents)} sentences, {n_tokens} tokens")

def passes(batches, behind):
    def run():
        model.clear_token_cache()
        with torch.inference_mode(), precision("cuda", "tf32"):
            if behind:
                for _ in copied_to_host(model.encode_words(b) for b in batches):
                    pass
            else:
                for b in batches:
                    to_host(model.encode_words(b))
    return run

def best(run, repeats=3):
    run(); torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter(); run(); torch.cuda.synchronize(); times.append(time.perf_counter() - start)
    return min(times) / n_tokens * 1e6

print("| batch | graphs | cell | copy | µs/token | tokens/s |\n| ---: | --- | --- | --- | ---: | ---: |")
for size in (512, 128, 32):
    batches = [[sents[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sents], size)]
    for graphs in (False, True):
        model.use_cuda_graphs(graphs)
        for fused in (False, True):
            BiLSTMStack.fused_cell_devices = ("cuda",) if fused else ()
            if graphs:
                model.use_cuda_graphs(False); model.use_cuda_graphs(True)  # graphs captured for this cell
            for behind in (False, True):
                us = best(passes(batches, behind))
                print(f"| {size} | {graphs} | {'one kernel' if fused else 'eight'} | "
                      f"{'one behind' if behind else 'waited'} | {us:.2f} | {1e6 / us:,.0f} |", flush=True)
model.use_cuda_graphs(False)
batches = [[sents[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sents], 512)]
for fused in (False, True):
    BiLSTMStack.fused_cell_devices = ("cuda",) if fused else ()
    run = passes(batches, True)
    run(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run(); torch.cuda.synchronize()
    events = prof.key_averages()
    gpu = sum(e.self_device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    print(f"\n== batch 512, eager, cell in {'one kernel' if fused else 'eight'}: GPU busy {gpu / n_tokens:.2f} us/token")
    print(events.table(sort_by="self_cuda_time_total", row_limit=10, max_name_column_width=70))
