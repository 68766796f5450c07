"""Where the new code's time goes on the GPU: the original architecture, batch 512, tf32."""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "benchmarks")
import spacy, torch
from bench_overhead import write_original
from spacy_elmo.bilm import BiLM, length_sorted_batches
from spacy_elmo.bilm.precision import precision

texts = json.loads(Path(".gpu/texts.json").read_text())
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
sentences = [[t.text for t in s] for d in nlp.pipe(texts) for s in d.sents]
n = sum(map(len, sentences))
with tempfile.TemporaryDirectory() as tmp:
    o, w = write_original(Path(tmp), {x for s in sentences for x in s})
    model = BiLM.from_allennlp(o, w).cuda().eval()
for size in (32, 512):
    batches = [[sentences[i] for i in rows] for rows in length_sorted_batches([len(s) for s in sentences], size)]
    def run(copy=True):
        model.clear_token_cache()
        with torch.inference_mode(), precision("cuda", "tf32"):
            for b in batches:
                x = model.encode_words(b)
                if copy:
                    x.cpu()
        torch.cuda.synchronize()
    run()
    for copy in (True, False):
        t = time.perf_counter(); run(copy); t = time.perf_counter() - t
        print(f"batch {size} copy={copy}: {n / t:,.0f} tokens/s ({t / n * 1e6:.2f} us/token)")
    # host time alone: how long the Python side takes to enqueue (no copy, no sync inside)
    model.clear_token_cache()
    with torch.inference_mode(), precision("cuda", "tf32"):
        torch.cuda.synchronize(); t = time.perf_counter()
        for b in batches:
            model.encode_words(b)
        enq = time.perf_counter() - t; torch.cuda.synchronize(); tot = time.perf_counter() - t
    print(f"batch {size}: host enqueue {enq / n * 1e6:.2f} us/token, until the GPU is done {tot / n * 1e6:.2f}")
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25))
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12))
