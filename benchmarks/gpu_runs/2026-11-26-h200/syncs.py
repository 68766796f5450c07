"""Every synchronisation left in words -> layers on the GPU (warn mode), with where it comes from."""
import traceback, warnings, sys
import torch
sys.path.insert(0, "tests/bilm")
from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.char_ids import distinct_words
from spacy_elmo.device import to_host
from test_gpu import SENTENCES, original_model

seen = []
def show(message, category, filename, lineno, file=None, line=None):
    if "synchroniz" in str(message):
        stack = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno} {f.name}" for f in traceback.extract_stack()
                 if "spacy_elmo" in f.filename or "syncs.py" in f.filename]
        seen.append(" <- ".join(reversed(stack[-4:])))
warnings.showwarning = show
for name, model in (("fixture", BiLM.from_allennlp("tests/fixtures/allennlp_elmo/options.json",
                                                   "tests/fixtures/allennlp_elmo/lm_weights.hdf5")),
                    ("original", original_model())):
    model = model.cuda().eval()
    with torch.inference_mode():
        for size in (1, 3, 40):
            sentences = (SENTENCES * 20)[:size]
            to_host(model.encode_indexed(*distinct_words(sentences)))
            model.clear_token_cache()
            torch.cuda.set_sync_debug_mode("warn")
            warnings.simplefilter("always")
            seen.clear()
            to_host(model.encode_indexed(*distinct_words(sentences)))
            cold = list(seen); seen.clear()
            to_host(model.encode_indexed(*distinct_words(sentences + [["new", "words"]])))
            torch.cuda.set_sync_debug_mode("default")
            print(f"{name} {size} sentences: cold {len(cold)} syncs, warm {len(seen)}")
            for s in sorted(set(cold + seen)):
                print("   ", s)
