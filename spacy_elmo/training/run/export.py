"""A trained biLM as files: the AllenNLP/bilm-tf pair plus what the LMs need.

    options.json, weights.hdf5   the biLM (BiLM.from_allennlp, the elmo
                                 component and AllenNLP all read these)
    vocab.txt                    the output vocabulary
    softmax.hdf5                 the shared softmax (see objective/softmax.py)
    pretrain.json                how the text was tokenised, and a summary

The folder is written whole or not at all (`spacy_elmo.util.swap_directory`),
and read back with every file checked before anything is built from it.
"""
import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import torch
from pydantic import ValidationError

from ...bilm import BiLM
from ...disk import writing
from ...errors import DamagedFileError, InputError, OutputError
from ...published_models import model_folder
from ...util import swap_directory
from ..objective.lm import PretrainingLM
from ..objective.softmax import SoftmaxHead
from ..data.vocab import LMVocab
from ..objective.scoring import Perplexity
from .checkpoint import TrainState
from .config import CorpusSettings, PretrainConfig

VOCAB_NAME = "vocab.txt"
SOFTMAX_NAME = "softmax.hdf5"
INFO_NAME = "pretrain.json"
# The [corpus] settings pretrain.json records: how the text was read.
TEXT_SETTINGS = ("tokenizer", "max_length")


def text_info(config: PretrainConfig) -> Dict[str, Any]:
    """How the run read its text, for pretrain.json (the perplexity command reads it the same way)."""
    return {key: getattr(config.corpus, key) for key in TEXT_SETTINGS}


def read_info(path: Union[str, Path]) -> Dict[str, Any]:
    """The model's pretrain.json (nothing, where there is none), its
    `TEXT_SETTINGS` checked as the config checks them and given the config's
    defaults where it has none; E325 names what is wrong."""
    path = Path(path)
    if not path.exists():
        return _text_settings({}, path)
    try:
        info = json.loads(path.read_bytes().decode("utf8"))
    except (OSError, ValueError) as err:
        raise DamagedFileError("E325", path=path, field="the file", found=f"unreadable ({err})",
                               expected="a JSON object") from None
    if not isinstance(info, dict):
        raise DamagedFileError("E325", path=path, field="the file", found=json.dumps(info)[:80],
                               expected="a JSON object")
    return _text_settings(info, path)


def _text_settings(info: Dict[str, Any], path: Path) -> Dict[str, Any]:
    """`info` with its `TEXT_SETTINGS` checked and filled in (E325)."""
    try:
        settings = CorpusSettings.model_validate({key: info[key] for key in TEXT_SETTINGS if key in info})
    except ValidationError as err:
        first = err.errors()[0]
        key, message = first["loc"][0], first["msg"]
        raise DamagedFileError("E325", path=path, field=f"'{key}'", found=json.dumps(info[key]),
                               expected=f"a value corpus.{key} takes ({message[0].lower()}{message[1:]})") from None
    return {**info, **{key: getattr(settings, key) for key in TEXT_SETTINGS}}


def check_model_folder(directory: Union[str, Path]) -> Path:
    """`directory` as the absolute path a model is swapped into, once it is
    one that can be: E326 for a symbolic link (the swap would move the link
    aside and could not remove it) or for the current folder or one above
    it (a folder a process works in cannot be renamed away)."""
    directory = Path(os.path.abspath(directory))
    if directory.is_symlink():
        target = os.readlink(directory)
        raise OutputError("E326", path=directory, found=f"a symbolic link to '{target}'",
                          why="would replace the link, and never the folder it points to",
                          fix=f"Remove the link, or write the model to '{target}' itself.")
    here = Path.cwd()
    if here == directory.resolve() or directory.resolve() in here.parents:
        raise OutputError("E326", path=directory, found="the current folder or one above it",
                          why="cannot be done to a folder this process works in",
                          fix="Name a new folder (e.g. ./model), or run the command from another folder.")
    return directory


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
    a coded error (E513, E514) naming the file, and the new files go with it;
    a `directory` that cannot be replaced is E326 (`check_model_folder`)."""
    directory = check_model_folder(directory)
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
    """The language models exported into `directory` (a folder, or a model's
    name: "elmo-en-small"), in evaluation mode, and its pretrain.json
    (`read_info`). Each file is checked before anything is built from it: E309
    for a missing one, E310 for a softmax that does not fit the biLM and
    vocabulary, E325 and the files' own codes otherwise."""
    directory = model_folder(directory)
    for name in (VOCAB_NAME, SOFTMAX_NAME):
        if not (directory / name).exists():
            raise InputError("E309", path=directory, name=name)
    info = read_info(directory / INFO_NAME)
    bilm = BiLM.from_allennlp(directory)
    vocab = LMVocab.from_file(directory / VOCAB_NAME)
    softmax = SoftmaxHead.load(directory / SOFTMAX_NAME)
    if softmax.in_dim != bilm.options.projection_dim or softmax.n_classes != len(vocab):
        raise DamagedFileError(
            "E310", path=directory, in_dim=softmax.in_dim, n_classes=softmax.n_classes,
            projection_dim=bilm.options.projection_dim, n_words=len(vocab),
        )
    lm = PretrainingLM(bilm, softmax).to(device)
    lm.eval()
    return lm, vocab, info
