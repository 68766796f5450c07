"""The ELMo biLM in pure PyTorch (no spaCy or Thinc imports here)."""

from .batching import length_sorted_batches
from .char_ids import MAX_CHARS_PER_TOKEN, batch_to_ids, words_to_ids
from .model import BiLM, BiLMOutput
from .options import BiLMOptions

__all__ = [
    "BiLM",
    "BiLMOutput",
    "BiLMOptions",
    "batch_to_ids",
    "words_to_ids",
    "length_sorted_batches",
    "MAX_CHARS_PER_TOKEN",
]
