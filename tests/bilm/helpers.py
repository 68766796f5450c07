"""Inputs and small models that more than one test file of the biLM uses."""

import json

import h5py
import numpy
import torch
from hypothesis import strategies as st

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.bilm.char_ids import distinct_words
from spacy_elmo.bilm.packing import SentencePacking
from spacy_elmo.training.data.lm_batches import collate

LINES = [
    "The cat sat on the mat .",
    "",
    "either/or and/or 1/2",
    "A much longer sentence , with more tokens than any other line in this small file .",
    "  spaced   out  ",
    "The cat sat on the mat .",
    "é 🙂 x",
]


def fixture_batches(fixture_dir):
    sentences = json.loads((fixture_dir / "sentences.json").read_text())
    files = [h5py.File(fixture_dir / f"lm_embeddings_{k}.hdf5", "r") for k in range(3)]
    for i in range(10):
        batch = [sentences[k][i].split() for k in range(3)]
        expected = [files[k][str(i)][...] for k in range(3)]  # (2, n, 16) each
        yield batch, expected


ANY_CHARACTER = st.characters(exclude_categories=())  # surrogates included
UNPAIRED_SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)
TOKENS = st.one_of(
    st.text(ANY_CHARACTER, max_size=8),
    st.text(st.one_of(ANY_CHARACTER, UNPAIRED_SURROGATE), min_size=1, max_size=8),
    st.sampled_from(["", " ", "\t", "\n", "\r\n", "\u3000", "\u200b", "\ufeff", "\x00", "<S>", "</S>", "🙂" * 30]),
    st.text(ANY_CHARACTER, min_size=60, max_size=300),  # longer than a token's 50 characters
)

SMALL = dict(
    char_embedding_dim=8,
    filters=[(1, 8), (2, 8), (3, 16)],
    n_highway=1,
    lstm_dim=16,
    projection_dim=8,
    n_layers=1,
)


def small_bilm(seed: int = 0) -> BiLM:
    torch.manual_seed(seed)
    return BiLM(BiLMOptions(**SMALL)).eval()


def values_and_gradients(stack, x, batch_sizes, weights, dropout=0.0, seed=0):
    stack.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_(True)
    torch.manual_seed(seed)
    outputs, _ = stack(x, batch_sizes, dropout=dropout)
    sum((out * w).sum() for out, w in zip(outputs, weights)).backward()
    grads = {name: p.grad.clone() for name, p in stack.named_parameters()}
    return [out.detach() for out in outputs], x.grad.clone(), grads


WORDS = "the cat sat on a mat while dogs ran in fields of green grass".split()


def pretraining_batches(n: int = 4):
    """`n` pretraining batches of six random sentences of WORDS (vocabulary: WORDS, <S>, </S>)."""
    vocab_ids = torch.arange(len(WORDS)).numpy()
    generator = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(n):
        lengths = sorted(torch.randint(1, 9, (6,), generator=generator).tolist(), reverse=True)
        sentences = [torch.randint(0, len(WORDS), (n,), generator=generator).numpy() for n in lengths]
        batches.append(collate(sentences, WORDS, vocab_ids, len(WORDS), len(WORDS) + 1, 50))
    return batches


def scaled_stack(**changes) -> BiLM:
    torch.manual_seed(0)
    options = dict(
        char_embedding_dim=8,
        filters=[(1, 8), (2, 8), (3, 16)],
        n_highway=1,
        lstm_dim=32,
        projection_dim=12,
        n_layers=2,
        cell_clip=3.0,
        proj_clip=3.0,
    )
    model = BiLM(BiLMOptions(**{**options, **changes})).eval()
    with torch.no_grad():
        for weights in model.lstm.parameters():
            weights.normal_(0.0, 0.4)  # gates that saturate, clips that bite
    return model


def packed_inputs(model: BiLM, lengths):
    rng = numpy.random.default_rng(0)
    words = "the bank raised its rates again to nobody 's surprise we sat on river".split()
    sentences = [[words[i] for i in rng.integers(0, len(words), n)] for n in lengths]
    packing = SentencePacking.of(*model._check_indexed(*distinct_words(sentences)))
    vectors = model._word_vectors(distinct_words(sentences)[0])
    return torch.nn.functional.embedding(torch.from_numpy(packing.inputs), vectors), packing.batch_sizes


# The stacks and batches the chunked recurrence is checked on (in test_lstm_graphs.py and test_cell_kernel.py).
STACK_CHANGES = [{}, {"use_skip_connections": False, "cell_clip": 0.0, "proj_clip": 0.0}]
BATCH_LENGTHS = [(17, 3, 1, 9, 9, 30, 2), (1,), (4, 4, 4), [3 + i % 11 for i in range(40)]]
