"""Training a biLM on raw text: corpus preparation, the joint forward and
backward language-model objective, checkpoints, export and perplexity."""
from .._deprecated import renamed
from .config import PretrainConfig, load_config
from .scoring import Perplexity
from .export import export_model, load_model
from .lm import PretrainingLM
from .perplexity import PerplexityReport, perplexity
from .pretrain import pretrain
from .trainer import PretrainResult
from .softmax import SoftmaxHead
from .vocab import LMVocab

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
