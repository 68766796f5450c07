"""Perplexity of an exported biLM's two language models over a text.

The `perplexity` function the CLI command (cli/perplexity.py) wraps; the
arithmetic over batches, shared with training's dev evaluation, is objective/scoring.py.
The text is batched as the dev evaluation batches its own, but scored from the
words (`CorpusBatches.word_batch`, `BiLM.top_layer_indexed`): only words the
token cache has not seen get character ids; the figures are the same.

The text is read and tokenised as in training (the tokenizer and the longest
segment are those recorded in the model's pretrain.json): each sentence, or
piece of one longer than ``max_length``, is scored from the zero state with
its own boundaries. A word outside the vocabulary is predicted as ``<UNK>``,
and it is that entry's probability that counts: as in the usual Penn Treebank
setup, where ``<unk>`` is a word, the figure is then only comparable between
models with the same vocabulary. The input side reads characters, so such a
word is still read as itself.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Sequence, Union

import numpy
import torch

from ..device import check_device
from ..errors import InputError
from .data.lm_batches import CorpusBatches
from .data.prepared import PreparedCorpus
from .data.reader import ReadStats, find_files, read_lines
from .data.tokenizers import make_tokenizer
from .objective.scoring import Perplexity, nll_sums
from .run.export import load_model

PathLike = Union[str, Path]
# Sentences are scored in pools of this many batches, each pool sorted by length.
_BATCHES_PER_POOL = 50


@dataclass
class PerplexityReport:
    perplexity: Perplexity
    oov: int  # predicted words outside the vocabulary, per direction
    read: ReadStats


def perplexity(
    model_dir: PathLike,
    text: Union[PathLike, Sequence[PathLike]],
    *,
    tokens_per_batch: int = 4000,
    device: Union[str, torch.device] = "cpu",
    cuda_graphs: bool = False,
) -> PerplexityReport:
    """Forward, backward and mean perplexity of the model in `model_dir` (a
    folder `pretrain` exported, or a model's name: "elmo-en-small") over
    `text` (a file or folder, or a list of them). cuda_graphs: on a GPU, run
    the LSTMs from CUDA graphs (`BiLM.use_cuda_graphs`).

    A text with no tokens (empty, blank or binary) is a coded error (E504),
    and so is a perplexity that is not finite (E506), never a NaN; so is a
    model file that is damaged (`load_model`: E325 names the file and field).
    """
    device = check_device(str(device))
    paths = [text] if isinstance(text, (str, Path)) else list(text)
    files = find_files(paths)
    lm, vocab, info = load_model(model_dir, device)
    lm.bilm.use_cuda_graphs(cuda_graphs)
    stats = ReadStats()
    tokenizer = make_tokenizer(info["tokenizer"])
    sentences = tokenizer(read_lines(files, stats))
    max_length = info["max_length"]
    max_chars = lm.bilm.options.max_characters_per_token
    sums = torch.zeros(3, dtype=torch.float64)
    oov = 0
    for pool in _pools(sentences, tokens_per_batch * _BATCHES_PER_POOL):
        # Batched as training's dev evaluation batches its text, and scored from
        # the words (the token cache serves the words seen before).
        corpus = PreparedCorpus.from_sentences(pool)
        data = CorpusBatches(corpus, vocab, max_length, tokens_per_batch, max_chars)
        known = numpy.fromiter((w in vocab.index for w in corpus.words), dtype=bool, count=len(corpus.words))
        oov += int(numpy.sum(~known[corpus.tokens]))
        sums += nll_sums(lm, (data.word_batch(b) for b in data.evaluation()), device)
    if int(sums[2]) == 0:
        raise InputError(
            "E504", what=f"the text {[str(p) for p in paths]}",
            detail=f"{stats.files} file(s), {stats.binary_files} of them binary and skipped: {stats.lines} "
                   f"line(s) with text, {stats.empty_lines} empty, {stats.skipped_lines} skipped as not UTF-8 "
                   f"text or binary",
        )
    ppl = Perplexity.from_sums(float(sums[0]), float(sums[1]), int(sums[2]), what="held-out")
    return PerplexityReport(ppl, oov, stats)


def _pools(sentences: Iterator[List[str]], n_tokens: int) -> Iterator[List[List[str]]]:
    pool: List[List[str]] = []
    size = 0
    for sentence in sentences:
        pool.append(sentence)
        size += len(sentence)
        if size >= n_tokens:
            yield pool
            pool, size = [], 0
    if pool:
        yield pool

