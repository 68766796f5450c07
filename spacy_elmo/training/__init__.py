"""Training a biLM on raw text: corpus preparation, the joint forward and
backward language-model objective, checkpoints, export and perplexity."""
from .config import PretrainConfig, load_config
from .evaluate import Perplexity
from .export import export_model, load_model
from .lm import BidirectionalLM
from .perplexity import PerplexityReport, perplexity
from .pretrain import pretrain
from .trainer import PretrainResult
from .softmax import SoftmaxHead
from .vocab import Vocab

__all__ = [
    "BidirectionalLM",
    "Perplexity",
    "PerplexityReport",
    "PretrainConfig",
    "PretrainResult",
    "SoftmaxHead",
    "Vocab",
    "export_model",
    "load_config",
    "load_model",
    "perplexity",
    "pretrain",
]
