"""Training a biLM on raw text.

    pretrain.py     the entry: reads the config, resolves its parts once and
                    wires them together
    data/           text -> sentences -> prepared corpus -> batches
    objective/      the joint forward and backward LMs and their softmax
    run/            config, optimiser and schedule, the training loop,
                    checkpoint, the run's folder, log, export
    perplexity.py   an exported model's perplexity over a text
"""
from .._deprecated import renamed
from .data.vocab import LMVocab
from .objective.lm import PretrainingLM
from .objective.scoring import Perplexity
from .objective.softmax import SoftmaxHead
from .perplexity import PerplexityReport, perplexity
from .pretrain import pretrain
from .run.config import PretrainConfig, load_config
from .run.export import export_model, load_model
from .run.trainer import PretrainResult

__all__ = [
    "PretrainingLM",
    "Perplexity",
    "PerplexityReport",
    "PretrainConfig",
    "PretrainResult",
    "SoftmaxHead",
    "LMVocab",
    "export_model",
    "load_config",
    "load_model",
    "perplexity",
    "pretrain",
]

# The old names: `Vocab` (easily taken for spaCy's) and `BidirectionalLM`
# (easily taken for the biLM itself).
__getattr__ = renamed(__name__, {"Vocab": ("LMVocab", LMVocab), "BidirectionalLM": ("PretrainingLM", PretrainingLM)})
