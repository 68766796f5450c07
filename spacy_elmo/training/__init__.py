"""Training a biLM on raw text.

    pretrain.py     the entry: reads the config, resolves its parts once and
                    wires them together
    data/           text -> sentences -> prepared corpus -> batches
    objective/      the joint forward and backward LMs and their softmax
    run/            config, optimiser and schedule, the training loop,
                    checkpoint, the run's folder, log, export
    perplexity.py   an exported model's perplexity over a text
"""
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

