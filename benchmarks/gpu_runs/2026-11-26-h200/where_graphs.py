"""Where the original biLM's GPU time goes, eager and from CUDA graphs: kernels by GPU time, one pass."""
import json, sys, time
import torch, spacy
sys.path.insert(0, "benchmarks"); sys.path.insert(0, "tests/bilm")
from spacy_elmo.bilm import length_sorted_batches
from spacy_elmo.bilm.precision import precision
from spacy_elmo.device import to_host
from test_gpu import original_model
from torch.profiler import profile, ProfilerActivity

texts = json.load(open(".gpu/texts.json"))[:900]
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
sents = [[t.text for t in s] for d in nlp.pipe(texts) for s in d.sents]
n_tokens = sum(map(len, sents))
model = original_model().cuda().eval()
for size in (32, 512):
    batches = [[sents[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sents], size)]
    for graphs in (False, True):
        model.use_cuda_graphs(graphs)
        def run():
            model.clear_token_cache()
            with torch.inference_mode(), precision("cuda", "tf32"):
                for b in batches:
                    to_host(model.encode_words(b))
        run(); torch.cuda.synchronize()
        start = time.perf_counter(); run(); torch.cuda.synchronize(); wall = time.perf_counter() - start
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            run(); torch.cuda.synchronize()
        events = prof.key_averages()
        gpu = sum(e.self_device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
        print(f"\n== batch {size}, graphs {graphs}: {n_tokens} tokens, wall {wall / n_tokens * 1e6:.2f} us/token "
              f"(unprofiled), GPU busy {gpu / n_tokens:.2f} us/token")
        print(events.table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=60))
