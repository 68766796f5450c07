"""A trained biLM as files: the AllenNLP/bilm-tf pair plus what the LMs need.

    options.json, weights.hdf5   the biLM (BiLM.from_allennlp, the elmo
                                 component and AllenNLP all read these)
    vocab.txt                    the output vocabulary
    softmax.hdf5                 the shared softmax (see objective/softmax.py)
    pretrain.json                how the text was tokenised, and a summary
"""
import json
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import torch

from ...bilm import BiLM
from ...disk import writing
from ...errors import DamagedFileError, InputError
from ...util import swap_directory
from ..objective.lm import PretrainingLM
from ..objective.softmax import SoftmaxHead
from ..data.vocab import LMVocab
from ..objective.scoring import Perplexity
from .checkpoint import TrainState
from .config import PretrainConfig

VOCAB_NAME = "vocab.txt"
SOFTMAX_NAME = "softmax.hdf5"
INFO_NAME = "pretrain.json"


def text_info(config: PretrainConfig) -> Dict[str, Any]:
    """How the run read its text, for pretrain.json (the perplexity command reads it the same way)."""
    return {"tokenizer": config.corpus.tokenizer, "max_length": config.corpus.max_length}


def training_info(lm: PretrainingLM, vocab: LMVocab, state: TrainState, train_perplexity: Optional[float],
                  dev: Optional[Perplexity]) -> Dict[str, Any]:
    """What pretrain.json says of the model at `state`: its size and vocabulary, the steps and tokens
    it was trained for, its last training perplexity and its dev perplexity there."""
    return {
        "vocab_size": len(vocab),
        "softmax": lm.softmax.kind,
        "parameters": sum(p.numel() for p in lm.parameters()),
        "steps": state.step,
        "train_tokens": state.tokens,
        "train_perplexity": train_perplexity,
        "dev": dev.to_dict() if dev else None,
    }


def export_model(lm: PretrainingLM, vocab: LMVocab, info: Dict[str, Any], directory: Union[str, Path],
                 dtype: str = "float32") -> None:
    """Write the model into `directory`, replacing what was there only once
    the new files are complete; the weights as `dtype` ("float32", or "float16":
    half the size, read back as float32). A disk that is full or read-only is
    a coded error (E513, E514) naming the file, and the new files go with it."""
    with writing(directory), swap_directory(directory) as tmp:
        lm.bilm.save_allennlp(tmp, dtype)
        with writing(tmp / VOCAB_NAME):
            vocab.to_file(tmp / VOCAB_NAME)
        lm.softmax.save(tmp / SOFTMAX_NAME, dtype)
        with writing(tmp / INFO_NAME):
            (tmp / INFO_NAME).write_text(json.dumps({**info, "weights_dtype": dtype}, indent=2), encoding="utf8")


def load_model(directory: Union[str, Path], device: Union[str, torch.device] = "cpu") -> Tuple[
    PretrainingLM, LMVocab, Dict[str, Any]
]:
    """The language models exported into `directory`, in evaluation mode."""
    directory = Path(directory)
    for name in (VOCAB_NAME, SOFTMAX_NAME):
        if not (directory / name).exists():
            raise InputError("E309", path=directory, name=name)
    bilm = BiLM.from_allennlp(directory)
    vocab = LMVocab.from_file(directory / VOCAB_NAME)
    softmax = SoftmaxHead.load(directory / SOFTMAX_NAME)
    if softmax.in_dim != bilm.options.projection_dim or softmax.n_classes != len(vocab):
        raise DamagedFileError(
            "E310", path=directory, in_dim=softmax.in_dim, n_classes=softmax.n_classes,
            projection_dim=bilm.options.projection_dim, n_words=len(vocab),
        )
    info_path = directory / INFO_NAME
    info = json.loads(info_path.read_text(encoding="utf8")) if info_path.exists() else {}
    lm = PretrainingLM(bilm, softmax).to(device)
    lm.eval()
    return lm, vocab, info
