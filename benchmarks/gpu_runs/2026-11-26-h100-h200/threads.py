"""The original biLM, TF32, batch 512, the cell in one kernel: µs a token at 1 and 16 torch threads
(eager waited / eager behind / graphs behind), then where the host's time goes in one eager pass
(cProfile, by own time) at each."""
import cProfile, io, json, pstats, sys, time
import torch, spacy
sys.path.insert(0, "tests/bilm")
from spacy_elmo.bilm import length_sorted_batches
from spacy_elmo.bilm.precision import precision
from spacy_elmo.device import copied_to_host, to_host
from test_gpu import original_model

texts = json.load(open(".gpu/texts.json"))
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
sents = [[t.text for t in s] for d in nlp.pipe(texts) for s in d.sents]
n_tokens = sum(map(len, sents))
batches = [[sents[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sents], 512)]
model = original_model().cuda().eval()
print(torch.cuda.get_device_name(), torch.__version__, n_tokens, "tokens", flush=True)

def run(behind):
    model.clear_token_cache()
    with torch.inference_mode(), precision("cuda", "tf32"):
        if behind:
            for _ in copied_to_host(model.encode_words(b) for b in batches): pass
        else:
            for b in batches: to_host(model.encode_words(b))

def best(behind, repeats=3):
    run(behind); torch.cuda.synchronize(); times = []
    for _ in range(repeats):
        start = time.perf_counter(); run(behind); torch.cuda.synchronize(); times.append(time.perf_counter() - start)
    return min(times) / n_tokens * 1e6

for threads in (1, 16, 1):
    torch.set_num_threads(threads)
    row = [f"{best(False):.2f}", f"{best(True):.2f}"]
    model.use_cuda_graphs(True); row.append(f"{best(True):.2f}"); model.use_cuda_graphs(False)
    print(f"threads {threads}: eager waited {row[0]}, eager behind {row[1]}, graphs behind {row[2]} us/token", flush=True)
for threads in (1, 16):
    torch.set_num_threads(threads)
    run(True); torch.cuda.synchronize()
    prof = cProfile.Profile(); prof.enable(); run(True); torch.cuda.synchronize(); prof.disable()
    out = io.StringIO(); pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(22)
    print(f"\n== cProfile, eager behind, threads {threads}\n" + out.getvalue()[-6000:], flush=True)
