"""Tune the biLM to one task's text: the demo's ``tune-bilm-*`` steps, and the v1 study's tuning jobs.

    python -m experiments.demo.tune ner --profile demo --bilm elmo-en-small --tune-steps 100
    python -m experiments.demo.tune ner --tune-text corpus/v2/pretrain/train_tweets.txt   # unlabelled text
    python -m experiments.demo.tune ner --published 2x1024_128_2048cnn_1xhighway          # nothing tuned

Three commands, in the job's log: the biLM's perplexity on the task's dev text
(``corpus/PROFILE/TASK/dev.txt``); its tuning (``spacy_elmo pretrain --init-from``, ``--tune-steps``
steps of 2,000 tokens) on the task's training text (``corpus/PROFILE/TASK/train.txt``) or on
``--tune-text`` (unlabelled text of the task's domain: corpus v2's tweets for NER, its reviews, plots
and dialogue for sentiment) into ``training/PROFILE/bilm_TASK``; its perplexity again. The perplexities
go to ``metrics/PROFILE/bilm_TASK_{before,after}.json``.

A tuning is done (``is_tuned``) while its record, ``training/PROFILE/bilm_TASK.tuned.json``, holds the
same commands (``what_it_makes``: not the threads or the progress bar that run them) and the digests of
what they read and wrote as they are now. A tuning folder left by other commands or inputs is removed
before the commands run, so that ``pretrain --resume`` starts afresh; one left by an interrupted run of
the same tuning is resumed. The record is complete once the three commands have succeeded.

With ``--published NAME`` nothing is tuned: the task's biLM folder (what the ELMo runs read) holds the
published model as it is (``experiments.data.published``).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import typer

from experiments.data.inputs import exit_on_bad_input
from experiments.data.published import PUBLISHED, PUBLISHED_DIR, PUBLISHED_FILES, published_bilm
from experiments.engine.run import digest
from experiments.errors import run_app
from experiments.files import write_atomic
from spacy_elmo.published_models import model_folder
from spacy_elmo.shipped_models import ELMO_EN_SMALL

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
MODULE = "experiments.demo.tune"

TASKS = ("ner", "sentiment5")
TUNE_CONFIG = "configs/bilm_release.cfg"
# The tuning's fixed settings: batches of 2,000 tokens, a low learning rate, a short warm-up.
TUNE_SETTINGS = (
    "--training.tokens_per_batch",
    "2000",
    "--training.eval_every",
    "50",
    "--training.checkpoint_every",
    "50",
    "--training.optimizer.learn_rate",
    "0.0005",
    "--training.schedule.warmup_steps",
    "20",
)
# Arguments of a tuning command that change how it runs, not what it makes (its progress bar, its threads):
# left out of the tuning's record, so that changing them tunes nothing again. Flags, then options with a value.
HOW_IT_RUNS_FLAGS = ("--progress", "--no-progress")
HOW_IT_RUNS_OPTIONS = ("--system.threads",)
BEFORE, AFTER = "before", "after"


@dataclass(frozen=True)
class Tuning:
    """``bilm`` tuned to one task of a profile; every path is relative to the project folder."""

    task: str
    profile: str = "full"
    bilm: str = ELMO_EN_SMALL  # a model's name or a biLM folder
    steps: int = 200
    gpu_id: int = -1
    threads: int = 0  # torch threads of the tuning (0: the tuning config's)
    text: str = ""  # the unlabelled text it is tuned on ("": the task's training split)
    published: str = ""  # a published model's name: no tuning, the model as it is

    @property
    def corpus(self) -> str:
        return f"corpus/{self.profile}/{self.task}"

    @property
    def folder(self) -> str:
        return f"training/{self.profile}/bilm_{self.task}"

    @property
    def model(self) -> str:
        """The tuned biLM: what the task's ELMo runs read."""
        return f"{self.folder}/model"

    @property
    def record(self) -> str:
        return f"training/{self.profile}/bilm_{self.task}.tuned.json"

    @property
    def train_text(self) -> str:
        """What the biLM is tuned on: the text given, else the task's training split."""
        return self.text or f"{self.corpus}/train.txt"

    @property
    def dev_text(self) -> str:
        return f"{self.corpus}/dev.txt"

    @property
    def metrics(self) -> str:
        return f"metrics/{self.profile}"

    def perplexity_file(self, when: str) -> str:
        return f"{self.metrics}/bilm_{self.task}_{when}.json"

    @property
    def device(self) -> str:
        return f"cuda:{self.gpu_id}" if self.gpu_id >= 0 else "cpu"


def tuning_commands(t: Tuning) -> List[List[str]]:
    """The biLM's perplexity on the task's dev text, its tuning to the text it is tuned on (its progress bar
    and a line per dev evaluation on the console), its perplexity again."""
    perplexity = [PYTHON, "-m", "spacy_elmo", "perplexity"]
    return [
        perplexity + [t.bilm, t.dev_text, "--device", t.device, "--overwrite", "--output", t.perplexity_file(BEFORE)],
        [
            PYTHON,
            "-m",
            "spacy_elmo",
            "pretrain",
            TUNE_CONFIG,
            t.folder,
            "--resume",
            "--init-from",
            t.bilm,
            "--device",
            t.device,
            "--paths.train",
            t.train_text,
            "--paths.dev",
            t.dev_text,
            "--vocab.path",
            t.bilm,
            "--training.max_steps",
            str(t.steps),
            *TUNE_SETTINGS,
            *(["--system.threads", str(t.threads)] if t.threads else []),
        ],
        perplexity + [t.model, t.dev_text, "--device", t.device, "--overwrite", "--output", t.perplexity_file(AFTER)],
    ]


def job_command(t: Tuning) -> List[str]:
    """This module as one job of a plan: the three commands, recorded when they succeed."""
    return [
        PYTHON,
        "-m",
        MODULE,
        t.task,
        "--profile",
        t.profile,
        "--bilm",
        t.bilm,
        "--tune-steps",
        str(t.steps),
        "--gpu-id",
        str(t.gpu_id),
        "--tune-text",
        t.train_text,
    ]


def tuning_inputs(t: Tuning) -> List[str]:
    return [t.bilm, TUNE_CONFIG, t.train_text, t.dev_text]


def tuning_outputs(t: Tuning) -> List[str]:
    return [t.model, t.perplexity_file(BEFORE), t.perplexity_file(AFTER)]


def _digests(paths: Sequence[str]) -> Dict[str, Optional[str]]:
    """{path: the digest of its content, None when it is missing}; a model's name is read as its folder."""
    folders = {path: model_folder(path) for path in paths}
    return {path: digest(folder) if folder.exists() else None for path, folder in folders.items()}


def what_it_makes(args: Sequence[str]) -> List[str]:
    """A command's arguments without those that change only how it runs (``HOW_IT_RUNS_FLAGS``,
    ``HOW_IT_RUNS_OPTIONS`` and their values): what a tuning's record keeps of it."""
    kept: List[str] = []
    rest = iter(args)
    for arg in rest:
        if arg in HOW_IT_RUNS_OPTIONS:
            next(rest, None)
        elif arg not in HOW_IT_RUNS_FLAGS:
            kept.append(arg)
    return kept


def tuning_record(t: Tuning) -> Dict[str, object]:
    """The tuning's commands as ``what_it_makes`` keeps them (not the Python, the threads or the progress bar
    that run them), with the digests of what they read and wrote (None: missing)."""
    return {
        "commands": [what_it_makes(command[1:]) for command in tuning_commands(t)],
        "inputs": _digests(tuning_inputs(t)),
        "outputs": _digests(tuning_outputs(t)),
    }


def stored_tuning_record(t: Tuning) -> Optional[Dict[str, object]]:
    """The record the last tuning left (``start_tuning``, ``tune``), its commands read as ``tuning_record``
    keeps them (``what_it_makes``), or None."""
    try:
        stored = json.loads(Path(t.record).read_text(encoding="utf-8"))
        commands = stored["commands"]
        return {**stored, "commands": [what_it_makes(command) for command in commands]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_tuned(t: Tuning) -> bool:
    """The tuning's done-check: its record holds what it would be tuned from now and what it made."""
    return stored_tuning_record(t) == tuning_record(t)


def start_tuning(t: Tuning) -> None:
    """Before the commands run: a tuning folder left by other commands or inputs (another text, a changed
    biLM) is removed, so that `pretrain --resume` starts afresh rather than refusing the changed settings (or
    continuing from weights trained on something else); one left by an interrupted run of these same
    commands and inputs is kept, to resume. The record written here says which it is next time; it is
    complete (``is_tuned``) once the commands have succeeded."""
    planned, stored = tuning_record(t), stored_tuning_record(t)
    if stored is not None and any(stored.get(key) != planned[key] for key in ("commands", "inputs")):
        shutil.rmtree(t.folder, ignore_errors=True)
    write_atomic(t.record, json.dumps({**planned, "outputs": None}, indent=1) + "\n")


def use_published(t: Tuning) -> None:
    """Instead of a tuning: the task's biLM folder holds the published model as it is, linked (copied where
    links cannot be made). A tuning there is removed, with its perplexities, so that nothing mixes the two."""
    source = published_bilm(t.published)
    shutil.rmtree(t.folder, ignore_errors=True)
    model = Path(t.model)
    model.mkdir(parents=True)
    for file in PUBLISHED_FILES:
        try:
            os.symlink(os.path.relpath(source / file, model), model / file)
        except OSError:  # no symlinks here (Windows without the privilege)
            shutil.copy2(source / file, model / file)
    for path in (t.perplexity_file(BEFORE), t.perplexity_file(AFTER), t.record):
        Path(path).unlink(missing_ok=True)


def tune(t: Tuning) -> None:
    """Run the three commands (each shown before it runs) and record them once they have succeeded; a
    command that fails ends this one with its exit status."""
    Path(t.metrics).mkdir(parents=True, exist_ok=True)
    start_tuning(t)
    for command in tuning_commands(t):
        typer.echo(f"$ {shlex.join(['python', *command[1:]])}")
        sys.stdout.flush()
        code = subprocess.call(command)
        if code != 0:
            typer.echo(f"tuning the biLM to {t.task}: the command above exited with status {code}", err=True)
            raise typer.Exit(code)
    write_atomic(t.record, json.dumps(tuning_record(t), indent=1) + "\n")


def main(
    task: str = typer.Argument(..., help=" or ".join(TASKS)),
    profile: str = typer.Option(Tuning.profile, help="The profile: its corpus/, training/ and metrics/ folders"),
    bilm: str = typer.Option(Tuning.bilm, help="The biLM that is tuned: a model's name or a biLM folder"),
    tune_steps: int = typer.Option(Tuning.steps, min=1, help="Steps (2,000 tokens each) of the tuning"),
    gpu_id: int = typer.Option(Tuning.gpu_id, help="GPU id, or -1 for the CPU"),
    published: str = typer.Option(
        "",
        "--published",
        help=f"A published AllenNLP model ({', '.join(PUBLISHED)}; in "
        f"{PUBLISHED_DIR}/NAME) to read as it is: nothing is tuned",
    ),
    threads: int = typer.Option(0, min=0, help="Torch threads of the tuning (0: the tuning config's)"),
    tune_text: str = typer.Option(
        "", "--tune-text", help='Unlabelled text to tune on ("": the task\'s training split)'
    ),
) -> None:
    """Tune the biLM to one task (three commands, in the job's log) and record what it was tuned from.
    With --published: no tuning; the task's biLM folder holds the published model as it is."""
    if task not in TASKS:
        raise typer.BadParameter(f"expected one of {', '.join(TASKS)}, got {task!r}", param_hint="TASK")
    os.chdir(ROOT)
    t = Tuning(
        task=task,
        profile=profile,
        bilm=bilm,
        steps=tune_steps,
        gpu_id=gpu_id,
        threads=threads,
        text=tune_text,
        published=published,
    )
    if not t.published and not Path(t.train_text).exists():
        typer.echo(
            f"tuning the biLM to {task}: expected the text to tune on at {t.train_text}, found "
            "nothing. Build it first (the task's training split: its convert step; corpus v2's "
            "per-source text: `spacy project run prepare-corpus-v2`).",
            err=True,
        )
        raise typer.Exit(2)
    if t.published:
        with exit_on_bad_input():
            use_published(t)
        typer.echo(f"{t.model}: {PUBLISHED_DIR}/{t.published} as it is (a published model is not tuned)")
        return
    tune(t)


app = typer.Typer(add_completion=False)
app.command()(main)

if __name__ == "__main__":
    run_app(app)
