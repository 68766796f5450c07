"""A pretraining run's last checkpoint as a model folder: the function behind
``python -m spacy_elmo export RUN_DIR OUTPUT``.

A long run can be measured, tried in a pipeline or shipped at any of its
checkpoints, while it trains or after it stopped, and the run is not touched:
the checkpoint is replaced whole by each save (see run/checkpoint.py), so it
is read whole, and nothing is written into the run's folder. The output is
what the run's own export would be at that step (options.json, weights.hdf5,
vocab.txt, softmax.hdf5, pretrain.json), in a new folder of its own.
"""
from pathlib import Path
from typing import Any, Dict, Union

from ..bilm import BiLM
from ..errors import InputError, OutputError
from ..util import check_writable
from .objective.lm import PretrainingLM
from .run.checkpoint import damaged_checkpoint, load_checkpoint
from .run.config import resolve
from .run.export import check_model_folder, export_model, text_info, training_info
from .run.run_dir import RunDir
from .run.train_log import TrainLog

PathLike = Union[str, Path]


def export_checkpoint(run_dir: PathLike, output: PathLike, dtype: str = "float32") -> Dict[str, Any]:
    """Write the biLM of `run_dir`'s last checkpoint to the new folder `output`.

    RETURNS: what goes into its pretrain.json (`steps` is the checkpoint's
        step; `dev` the dev perplexity the run logged at that step, if it
        evaluated there).
    Raises E533 for a folder with no pretraining run or no checkpoint yet,
    E534 for an `output` that exists and is not an empty folder, E326 for one
    that is a symbolic link or the current folder, and E317 for a checkpoint
    (a folder, say) or vocabulary that is damaged or does not fit the run; E514
    for an `output` in a folder that cannot be written, E513 for a disk that
    fills up on the way (nothing is left of the export then).
    """
    run = RunDir(run_dir)
    if not run.config.exists():
        raise InputError("E533", path=run.path, reason="it has no config.cfg, so it holds no pretraining run")
    if not run.checkpoint.exists():
        raise InputError("E533", path=run.path, reason="it has no checkpoint.pt yet (a run writes one every "
                                                       "training.checkpoint_every steps)")
    output = check_model_folder(output)
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        raise OutputError("E534", path=output, found="a folder with files in it" if output.is_dir() else "a file")
    check_writable(output)  # a read-only folder: E514 before the checkpoint is read
    config = run.stored_config()
    vocab = run.read_vocab()
    payload = load_checkpoint(run.checkpoint)
    softmax = resolve(config.softmax)(config.model.projection_dim, len(vocab))
    lm = PretrainingLM(BiLM(config.model.options), softmax)
    run.check_checkpoint_vocab(payload, vocab, lm)
    try:
        lm.load_state_dict(payload["model"])
    except RuntimeError as err:
        raise damaged_checkpoint(run.checkpoint, f"it does not fit the run's model ({str(err).strip()[:300]})") from err
    state, log = payload["state"], TrainLog(run.log)
    info = {
        **text_info(config),
        **training_info(lm, vocab, state, log.train_perplexity_at(state.step), log.dev_at(state.step)),
        "checkpoint_of": str(run.path),
    }
    export_model(lm, vocab, info, output, dtype)
    return info
