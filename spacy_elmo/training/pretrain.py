"""Training a biLM on raw text: the function behind ``python -m spacy_elmo pretrain``.

The config names four parts, each a registered function (registry.py): the
tokenizer (or a spaCy pipeline), the softmax, the optimiser and the
learning-rate schedule. confection resolves them once, here, into the objects
or factories that build them (`Parts`), and each consumer is handed only its own.

One process, or several under ``torchrun`` (DistributedDataParallel, gloo on
the CPU, NCCL on GPUs): process 0 prepares the data and writes the run's
files, every process trains on its share of each epoch's batches.
"""
import contextlib
import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import torch
from confection import SimpleFrozenDict
from wasabi import Printer

from ..bilm import BiLM, BiLMOptions
from ..bilm.weights import resolve_paths
from ..device import check_device
from ..errors import DamagedFileError, DivergedRunError, InputError
from ..published_models import model_folder
from ..util import atomic_path
from .data.lm_batches import CorpusBatches
from .data.prepared import PreparedCorpus, fingerprint, is_prepared, prepare_corpus
from .data.reader import find_files, is_binary
from .data.tokenizers import Tokenizer, make_tokenizer
from .data.vocab import LMVocab
from ..disk import RUN_FILE, writing
from .objective.lm import PretrainingLM
from .objective.softmax import SoftmaxFactory, SoftmaxHead
from .run.config import ModelSettings, PretrainConfig, load_config, resolve
from ..distributed import Distributed
from .run.export import SOFTMAX_NAME, VOCAB_NAME, check_model_folder, text_info
from .run.optim import OptimizerFactory, ScheduleFactory
from .run.run_dir import InputFiles, RunDir
from .run.trainer import PretrainResult, StepHook, Trainer

PathLike = Union[str, Path]


@dataclass(frozen=True)
class Parts:
    """The parts the config names, resolved through the registries."""

    tokenizer: Tokenizer  # lines -> sentences of tokens
    softmax: SoftmaxFactory  # (input dimension, vocabulary size) -> the shared softmax
    optimizer: OptimizerFactory  # parameters -> a torch optimiser
    schedule: ScheduleFactory  # the optimiser -> its learning-rate schedule


def resolve_parts(config: PretrainConfig) -> Parts:
    """The config's parts: its tokenizer, and the registered functions its sections name, resolved."""
    return Parts(
        tokenizer=make_tokenizer(config.corpus.tokenizer),
        **{name: resolve(section) for name, section in config.parts().items()},
    )


def pretrain(
    config: Union[PretrainConfig, PathLike],
    output_dir: PathLike,
    *,
    overrides: Dict[str, Any] = SimpleFrozenDict(),
    resume: bool = False,
    init_from: Optional[PathLike] = None,
    device: str = "auto",
    progress: bool = True,
    on_step: Optional[StepHook] = None,
) -> PretrainResult:
    """Train the forward and backward LMs of a biLM and export the result.

    config: a PretrainConfig, or the path of a ``.cfg`` (with `overrides`).
    output_dir: the run's folder (see run/run_dir.py); it must be new or empty,
        or hold this same run and `resume` be set.
    init_from: a folder with options.json + weights.hdf5 to start from, or a
        model's name ("elmo-en-small"; `published_models.model_folder`); its
        architecture replaces ``[model]``, and its softmax is kept when it has
        one (softmax.hdf5, vocab.txt) for the same vocabulary.
    device: "auto" (a GPU when there is one), "cpu" or "cuda".
    on_step: called after every step with the state and the model (tests use
        it to stop or upset a run).
    """
    if device != "auto":
        check_device(device)
    dist = Distributed.from_env(device)
    printer = Printer(no_print=not dist.is_main)
    config = load_config(config, overrides) if not isinstance(config, PretrainConfig) else copy.deepcopy(config)
    if init_from is not None:
        config.paths.init = str(init_from)
    if config.paths.init:
        init_options = BiLMOptions.from_file(resolve_paths(config.paths.init)[0])
        if init_options != config.model.options:
            printer.info(f"The architecture is {config.paths.init}'s: it replaces [model]")
        config.model = ModelSettings.from_options(init_options)
    run = RunDir(output_dir)
    # Before the folder is claimed: a typo in a path or a name costs nothing.
    files = _input_files(config, run)
    check_model_folder(run.model)  # a link there: E326 now, not after training
    parts = resolve_parts(config)
    if config.system.threads:
        torch.set_num_threads(config.system.threads)
    with run.lock() if dist.is_main else contextlib.nullcontext():  # held until the run ends
        return _run(config, parts, files, run, dist, printer, resume, progress, on_step)


def _input_files(config: PretrainConfig, run: RunDir) -> InputFiles:
    """The text files the run reads, listed once for the whole run (the record
    of its inputs, the prepared corpora and their fingerprints all take this
    list), after checking that they exist and are text, that the run's own
    folders are not among them, and that the vocabulary file reads (E301, E311,
    E319, E320, E321, E303/E304)."""
    _check_layout(config, run)
    files = InputFiles(train=find_files(config.train_paths), dev=find_files(config.dev_paths))
    if not files.train:
        raise InputError("E311", paths=[str(p) for p in config.train_paths])
    for key, which, listed in (("train", "training", files.train), ("dev", "dev", files.dev)):
        binary = [path for path in listed if is_binary(path)]
        if binary:
            more = f" (and {len(binary) - 1} more file(s) like it)" if len(binary) > 1 else ""
            raise InputError("E319", which=which, path=binary[0], more=more, key=key)
    if config.vocab.path:
        LMVocab.from_file(vocab_file(config.vocab.path))
    return files


def _check_layout(config: PretrainConfig, run: RunDir) -> None:
    """E327 when the prepared corpora's folder is a text path or holds one
    (preparing replaces its train/ and dev/ folders); E320 when the run folder
    or the prepared corpora's folder lies inside a text folder, where the run
    would read its own files as text (a hidden folder, which `find_files`
    leaves out, is no trouble)."""
    prepared = run.prepared(config).resolve()
    for key, which, paths in (("train", "training", config.train_paths), ("dev", "dev", config.dev_paths)):
        for text in paths:
            text = text.resolve()
            if text == prepared or prepared in text.parents:
                relation = "is" if text == prepared else "holds"
                raise InputError("E327", prepared=prepared, relation=relation, which=which, text=text, key=key)
            for what, inner in (("run folder", run.path.resolve()), ("prepared corpus folder", prepared)):
                if text.is_dir() and (inner == text or text in inner.parents):
                    if not any(part.startswith(".") for part in inner.relative_to(text).parts):
                        raise InputError("E320", what=what, inner=inner, which=which, folder=text, key=key)


def _run(
    config: PretrainConfig,
    parts: Parts,
    files: InputFiles,
    run: RunDir,
    dist: Distributed,
    printer: Printer,
    resume: bool,
    progress: bool,
    on_step: Optional[StepHook],
) -> PretrainResult:
    if dist.is_main:
        if run.config.exists() and not run.has_progress:
            printer.info(f"{run.path} holds a run that stopped before its first checkpoint: starting it again")
        for change in run.claim(config, resume, files):
            printer.warn(f"Resuming with a changed setting: {change}")
    prepared = run.prepared(config)
    tokenizer = config.corpus.tokenizer, parts.tokenizer  # its name (the prepared corpus's key) and itself
    train = _prepared(files.train, *tokenizer, prepared / "train", dist, progress, printer)
    dev = _prepared(files.dev, *tokenizer, prepared / "dev", dist, progress, printer) if config.dev_paths else None
    if train.n_tokens == 0:
        raise InputError("E311", paths=[str(p) for p in config.train_paths])
    if dev is not None and dev.n_tokens == 0:
        raise InputError("E505", paths=[str(p) for p in config.dev_paths])
    dist.start()
    try:
        dist.barrier()  # process 0 has claimed the folder
        continuing = resume and run.checkpoint.exists()
        vocab = _vocab(config, run, train, dist, continuing)
        lm = _build_model(config, parts.softmax, vocab, printer).to(dist.device)

        def batches(corpus: PreparedCorpus) -> CorpusBatches:
            return CorpusBatches(corpus, vocab, config.corpus.max_length, config.training.tokens_per_batch,
                                 config.model.options.max_characters_per_token)

        trainer = Trainer(
            lm, vocab, config.training, seed=config.system.seed, optimizer=parts.optimizer, schedule=parts.schedule,
            export_info=text_info(config),
            run=run, train=batches(train), dev=batches(dev) if dev else None, dist=dist, printer=printer,
        )
        if continuing:
            trainer.restore()
        elif dist.is_main:
            trainer.log.truncate(0)  # the records of a run stopped before its first checkpoint
        _describe(trainer, printer)
        result = trainer.fit(progress=progress, on_step=on_step)
    except DivergedRunError:
        # Every process raises it at the same step (its figures are summed over
        # all processes, or the weights are the same everywhere): they stop together.
        dist.stop(clean=True)
        raise
    except BaseException:
        dist.stop(clean=False)
        raise
    dist.stop()
    return result


def _prepared(
    files: List[Path], name: str, tokenizer: Tokenizer, directory: Path, dist: Distributed, progress: bool,
    printer: Printer,
) -> PreparedCorpus:
    """Process 0 prepares the corpus of `files` (`name`: the tokenizer's, as
    the config names it); the others wait for it to appear (``torchrun`` stops
    them should process 0 fail)."""
    if dist.is_main:
        return prepare_corpus(files, name, directory, tokenize=tokenizer, progress=progress, log=printer.info)
    expected = fingerprint(files, name)
    while True:
        if is_prepared(directory, expected):
            try:
                return PreparedCorpus.load(directory)
            except DamagedFileError:
                pass  # damaged since: process 0 prepares it again
        time.sleep(1.0)


def _vocab(config: PretrainConfig, run: RunDir, train: PreparedCorpus, dist: Distributed, continuing: bool) -> LMVocab:
    """The run's output vocabulary, kept in the run folder once chosen
    (the checkpoint checks that it is the one it was trained with)."""
    if continuing and run.vocab.exists():
        return run.read_vocab()
    if config.vocab.path:
        vocab = LMVocab.from_file(vocab_file(config.vocab.path))
    else:
        vocab = LMVocab.from_counts(train.words, train.counts, config.vocab.size, config.vocab.min_count)
    if dist.is_main:
        with writing(run.vocab, code=RUN_FILE), atomic_path(run.vocab) as tmp:
            vocab.to_file(tmp)
    return vocab


def vocab_file(path: str) -> Path:
    """vocab.path as a file: a model's name or folder stands for its vocab.txt
    (``--init-from elmo-en-small --vocab.path elmo-en-small`` keeps its vocabulary)."""
    found = model_folder(path)
    return found / VOCAB_NAME if found.is_dir() else found


def _build_model(config: PretrainConfig, make_softmax: SoftmaxFactory, vocab: LMVocab, printer: Printer) -> PretrainingLM:
    torch.manual_seed(config.system.seed)
    init = model_folder(config.paths.init) if config.paths.init else None
    bilm = BiLM.from_allennlp(init) if init else BiLM(config.model.options)
    softmax = make_softmax(config.model.projection_dim, len(vocab))
    if init is not None:
        softmax = _initial_softmax(init, vocab, softmax, printer)
    return PretrainingLM(bilm, softmax, config.training.dropout)


def _initial_softmax(init: Path, vocab: LMVocab, fresh: SoftmaxHead, printer: Printer) -> SoftmaxHead:
    """The init model's softmax if it has one for this same vocabulary and shape."""
    if not ((init / VOCAB_NAME).exists() and (init / SOFTMAX_NAME).exists()):
        printer.info(f"{init} has no softmax: starting a fresh one")
        return fresh
    old = SoftmaxHead.load(init / SOFTMAX_NAME)
    if LMVocab.from_file(init / VOCAB_NAME) == vocab and old.same_shape(fresh):
        printer.info(f"Continuing from the softmax of {init}")
        return old
    printer.info(f"The vocabulary or softmax settings differ from {init}'s: starting a fresh softmax")
    return fresh


def _describe(trainer: Trainer, printer: Printer) -> None:
    lm, state = trainer.lm, trainer.state
    printer.info(
        f"biLM {trainer.parameters:,} parameters (LSTMs {sum(p.numel() for p in lm.bilm.lstm.parameters()):,}, "
        f"softmax {sum(p.numel() for p in lm.softmax.parameters()):,}, {lm.softmax.kind}); "
        f"vocabulary {len(trainer.vocab):,}; {trainer.dist.world_size} process(es) on {trainer.dist.device}"
    )
    printer.info(
        f"Training on {trainer.train.corpus.n_tokens:,} tokens in {len(trainer.train):,} segments, "
        f"about {trainer.steps_per_epoch():,} steps an epoch"
        + (f"; resuming at step {state.step:,}" if state.step else "")
    )
