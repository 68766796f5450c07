"""The `full` experiment: ELMo against the baseline on NER and 5-class sentiment, over seeds.

    python -m experiments.run.full --jobs 2                 # the whole experiment, two jobs at a time
    python -m experiments.run.full --gpu-id 0 --jobs 24     # one GPU, many cores
    python -m experiments.run.full plan                     # the jobs, and which are done
    python -m experiments.run.full --profile long --steps 3000 --eval-frequency 500 --seeds "0 1 2" \\
        --variants baseline,elmo --reuse-tuned-from full    # longer training on full's corpora and biLMs

The jobs, in order (``plan_jobs``):

1. convert WNUT-16 NER and the 5-class Rotten Tomatoes sentiment task into
   ``corpus/PROFILE/{ner,sentiment5}``, and each task's train and dev text into .txt;
2. tune the biLM (``--bilm``: a model's name, ``elmo-en-small`` by default, or a biLM
   folder) to each task's training text (or to unlabelled text of
   the task's domain, ``--tune-text TASK=PATH``: corpus v2's tweets for NER, its reviews,
   plots and dialogue for sentiment) for ``--tune-steps`` steps of 2,000 tokens
   (``pretrain --resume``), its perplexity on the task's dev text measured before and
   after (``metrics/PROFILE/bilm_TASK_{before,after}.json``);
3. train each task and seed with each variant: ``baseline`` (no ELMo), ``elmo``
   (the tuned biLM) and ``elmo_untuned`` (the biLM as given), and score it on the test split:
   a run of the studies' engine (``experiments.engine``) named ``TASK_VARIANT/seedN``, its
   record in ``metrics/PROFILE/records``, its pipeline kept in ``training/PROFILE/TASK_VARIANT/seedN``;
4. write each variant's per-seed score files from the records (``metrics/PROFILE/TASK_VARIANT``,
   ``experiments.engine.views``);
5. write the report (``reports/PROFILE``).

``--reuse-tuned-from OTHER`` skips steps 1 and 2 and reads OTHER's corpora and tuned biLMs.
``--published NAME`` uses one of the published AllenNLP models (``assets/published/NAME``,
``spacy project assets --extra``) instead of ``--bilm``, as it is: no tuning (step 2), and
the ``elmo`` runs read it directly (``elmo_untuned`` would be the same runs, so it is left out).
Jobs run ``--jobs`` at a time, one thread each (``experiments.run.jobs``), a job
as soon as what it needs is done; logs go to ``logs/PROFILE/JOB.log``. Paths are
relative to the project folder, where every job runs.

Resumable: a job whose result is current is skipped, so a stopped experiment
continues where it was, and nothing made from other inputs is kept. A training
run is done when its record holds its current fingerprint (the engine's one check: the
config with its overrides, every file it reads, the test split, the versions); a tuning
when its record (``training/PROFILE/bilm_TASK.tuned.json``)
holds the same commands and the digests of its inputs and outputs as they are now;
otherwise the tuning runs again and ``pretrain --resume`` continues or checks the
run. The conversions, score files and the report are cheap and run every time; their outputs
are deterministic, so the digests that the fingerprints compare do not move.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import click
import typer
from typer.core import TyperGroup

from experiments.engine import run as engine
from experiments.engine.plan import importable, run_job, work_lock
from experiments.errors import ExperimentError
from experiments.files import write_atomic
from experiments.run.jobs import Job, is_done, run_jobs
from spacy_elmo.published_models import model_folder
from spacy_elmo.shipped_models import ELMO_EN_SMALL

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable

TASKS = ("ner", "sentiment5")
VARIANTS = ("baseline", "elmo", "elmo_untuned")
# task: (converter module, its input under the project folder, the stem of the task's configs)
SOURCES = {
    "ner": ("experiments.convert.ner", "assets/wnut16/ner.txt", "ner"),
    "sentiment5": ("experiments.convert.sentiment5", "assets/rt_snippets/movieReviewSnippets_GroundTruth.txt",
                   "textcat"),
}
TUNE_CONFIG = "configs/bilm_release.cfg"
# The published AllenNLP models (project.yml's assets, downloaded by `spacy project assets --extra`):
# assets/published/NAME/options.json and weights.hdf5. The original, the medium and the small model.
PUBLISHED_DIR = "assets/published"
PUBLISHED = ("2x4096_512_2048cnn_2xhighway", "2x2048_256_2048cnn_1xhighway", "2x1024_128_2048cnn_1xhighway")
PUBLISHED_FILES = ("options.json", "weights.hdf5")
# The tuning's fixed settings: batches of 2,000 tokens, a low learning rate, a short warm-up.
TUNE_SETTINGS = (
    "--training.tokens_per_batch", "2000", "--training.eval_every", "50", "--training.checkpoint_every", "50",
    "--training.optimizer.learn_rate", "0.0005", "--training.schedule.warmup_steps", "20",
)
# Arguments of a tuning command that change how it runs, not what it makes (its progress bar, its threads):
# left out of the tuning's record, so that changing them tunes nothing again. Flags, then options with a value.
HOW_IT_RUNS_FLAGS = ("--progress", "--no-progress")
HOW_IT_RUNS_OPTIONS = ("--system.threads",)


@dataclass(frozen=True)
class Experiment:
    """The settings of one profile of the experiment; every path is relative to the project folder."""
    profile: str = "full"
    seeds: Tuple[int, ...] = (0, 1, 2, 3, 4)
    steps: int = 1000
    eval_frequency: int = 200
    tune_steps: int = 200
    bilm: str = ELMO_EN_SMALL  # a model's name or a biLM folder
    gpu_id: int = -1
    variants: Tuple[str, ...] = VARIANTS
    reuse_tuned_from: Optional[str] = None
    title: Optional[str] = None
    published: str = ""  # a published model's name (PUBLISHED): read as it is, instead of bilm, never tuned
    threads: int = 0  # torch threads of the tuning (0: the tuning config's)
    tune_texts: Tuple[Tuple[str, str], ...] = ()  # (task, text the biLM is tuned on); others: the training split

    @property
    def data_profile(self) -> str:
        """The profile whose corpora and tuned biLMs the runs read."""
        return self.reuse_tuned_from or self.profile

    @property
    def tunes(self) -> bool:
        """Whether this profile converts the data and tunes the biLMs itself."""
        return self.reuse_tuned_from is None

    @property
    def source_bilm(self) -> str:
        """The biLM the ELMo runs start from: a published model's folder, or ``bilm``."""
        return f"{PUBLISHED_DIR}/{self.published}" if self.published else self.bilm

    @property
    def run_variants(self) -> Tuple[str, ...]:
        """The variants that are run: with a published biLM, which is never tuned, ``elmo``
        and ``elmo_untuned`` would be the same runs, so the latter is left out."""
        return tuple(v for v in self.variants if not (self.published and v == "elmo_untuned"))

    @property
    def device(self) -> str:
        return f"cuda:{self.gpu_id}" if self.gpu_id >= 0 else "cpu"

    @property
    def metrics(self) -> str:
        return f"metrics/{self.profile}"

    @property
    def logs(self) -> str:
        return f"logs/{self.profile}"

    @property
    def records(self) -> str:
        """The engine's records of the training runs."""
        return f"metrics/{self.profile}/records"

    @property
    def work(self) -> str:
        """Where the trained pipelines are kept: work/TASK_VARIANT/seedN (the report reads their layer mixes)."""
        return f"training/{self.profile}"

    def corpus(self, task: str) -> str:
        return f"corpus/{self.data_profile}/{task}"

    def tuning_dir(self, task: str) -> str:
        return f"training/{self.data_profile}/bilm_{task}"

    def tuning_text(self, task: str) -> str:
        """What the biLM is tuned on for `task`: a text given for it, else the task's training split."""
        return dict(self.tune_texts).get(task) or f"{self.corpus(task)}/train.txt"

    def tuned_bilm(self, task: str) -> str:
        return f"{self.tuning_dir(task)}/model"

    def tuning_record(self, task: str) -> str:
        return f"training/{self.profile}/bilm_{task}.tuned.json"

    def perplexity_file(self, task: str, when: str) -> str:
        return f"{self.metrics}/bilm_{task}_{when}.json"

    def run_dir(self, task: str, variant: str) -> str:
        return f"training/{self.profile}/{task}_{variant}"

    def bilm_of(self, task: str, variant: str) -> Optional[str]:
        """The biLM a variant's runs read (None: no ELMo)."""
        tuned = self.source_bilm if self.published else self.tuned_bilm(task)
        return {"baseline": None, "elmo": tuned, "elmo_untuned": self.source_bilm}[variant]

    def config(self, task: str, variant: str) -> str:
        return f"configs/{SOURCES[task][2]}_{'baseline' if variant == 'baseline' else 'elmo'}.cfg"

    @property
    def report_title(self) -> str:
        return self.title or f"Profile {self.profile}, seeds {' '.join(map(str, self.seeds))}"


def convert_command(e: Experiment, task: str) -> List[str]:
    module, source, _ = SOURCES[task]
    return [PYTHON, "-m", module, source, e.corpus(task)]


def text_command(e: Experiment, task: str, split: str) -> List[str]:
    corpus = e.corpus(task)
    return [PYTHON, "-m", "experiments.convert.task_text", f"{corpus}/{split}.spacy", f"{corpus}/{split}.txt"]


def tuning_commands(e: Experiment, task: str) -> List[List[str]]:
    """The biLM's perplexity on the task's dev text, its tuning to the task's training text (its progress
    bar and a line per dev evaluation on the console), its perplexity again."""
    dev = f"{e.corpus(task)}/dev.txt"
    perplexity = [PYTHON, "-m", "spacy_elmo", "perplexity"]
    return [
        perplexity + [e.bilm, dev, "--device", e.device, "--overwrite", "--output", e.perplexity_file(task, "before")],
        [PYTHON, "-m", "spacy_elmo", "pretrain", TUNE_CONFIG, e.tuning_dir(task), "--resume",
         "--init-from", e.bilm, "--device", e.device, "--paths.train", e.tuning_text(task),
         "--paths.dev", dev, "--vocab.path", e.bilm, "--training.max_steps", str(e.tune_steps),
         *TUNE_SETTINGS, *(["--system.threads", str(e.threads)] if e.threads else [])],
        perplexity + [e.tuned_bilm(task), dev, "--device", e.device, "--overwrite", "--output",
                      e.perplexity_file(task, "after")],
    ]


def published_bilm(name: str) -> Path:
    """The folder of a published model, checked: an `ExperimentError` for a name that is not one
    of PUBLISHED, and one saying what to do where its files have not been downloaded."""
    if name not in PUBLISHED:
        raise ExperimentError("--published", expected=f"one of this project's published ELMo models, "
                              f"{', '.join(PUBLISHED)} (vars.published, or full's --published)", found=repr(name),
                              fix="name one of them, or \"\" for the project's own biLM")
    folder = Path(PUBLISHED_DIR) / name
    missing = [str(folder / file) for file in PUBLISHED_FILES if not (folder / file).is_file()]
    if missing:
        raise ExperimentError(" and ".join(missing), expected=f"the published model {name}'s "
                              f"{' and '.join(PUBLISHED_FILES)}", found="no such file" if len(missing) == 1 else "neither",
                              fix="run `python -m spacy project assets --extra` on a machine with internet access (the "
                                  "published ELMo models are downloaded from allennlp.s3.amazonaws.com), or copy the two "
                                  f"files there (the model's elmo_{name}_options.json and elmo_{name}_weights.hdf5, as "
                                  "options.json and weights.hdf5)")
    return folder


def use_published(e: Experiment, task: str) -> None:
    """Instead of a tuning: the task's biLM folder (what ``elmo`` runs read) holds the
    published model as it is, linked (copied where links cannot be made). A tuning run of
    another biLM there is removed, with its perplexities, so that nothing mixes the two."""
    source = published_bilm(e.published)
    shutil.rmtree(e.tuning_dir(task), ignore_errors=True)
    model = Path(e.tuned_bilm(task))
    model.mkdir(parents=True)
    for file in PUBLISHED_FILES:
        try:
            os.symlink(os.path.relpath(source / file, model), model / file)
        except OSError:  # no symlinks here (Windows without the privilege)
            shutil.copy2(source / file, model / file)
    for path in (e.perplexity_file(task, "before"), e.perplexity_file(task, "after"), e.tuning_record(task)):
        Path(path).unlink(missing_ok=True)


def tune_command(e: Experiment, task: str) -> List[str]:
    """One job for the three tuning commands (``tune``, below), which records them when they succeed."""
    return [PYTHON, "-m", "experiments.run.full", "tune", task, "--profile", e.profile, "--bilm", e.bilm,
            "--tune-steps", str(e.tune_steps), "--gpu-id", str(e.gpu_id), "--tune-text", e.tuning_text(task)]


def train_overrides(e: Experiment, task: str, variant: str) -> List[str]:
    """The ``spacy train`` settings of a run, as command-line arguments."""
    corpus = e.corpus(task)
    args = ["--paths.train", f"{corpus}/train.spacy", "--paths.dev", f"{corpus}/dev.spacy",
            "--training.max_steps", str(e.steps), "--training.eval_frequency", str(e.eval_frequency)]
    bilm = e.bilm_of(task, variant)
    return args + (["--paths.elmo", bilm] if bilm else [])


def engine_run(e: Experiment, task: str, variant: str, seed: int) -> engine.Run:
    """One seed of a task's variant, as the engine trains, scores and records it: ``TASK_VARIANT/seedN``."""
    from experiments.run.train_seeds import overrides_from_args

    return engine.Run(id=f"{task}_{variant}/seed{seed}", config=e.config(task, variant),
                      overrides=tuple(overrides_from_args(train_overrides(e, task, variant)).items()), seed=seed,
                      test=f"{e.corpus(task)}/test.spacy", labels={"task": task, "variant": variant, "seed": str(seed)})


def scores_command(e: Experiment, task: str, variant: str) -> List[str]:
    """The per-seed score files of a variant's runs, from their records, for the report."""
    return [PYTHON, "-m", "experiments.engine.views", e.records, e.metrics,
            *(engine_run(e, task, variant, seed).id for seed in e.seeds)]


def report_command(e: Experiment) -> List[str]:
    return [PYTHON, "-m", "experiments.report.comparison", e.metrics, f"training/{e.profile}",
            f"reports/{e.profile}", "--title", e.report_title]


# What a job's result is current for (the done-checks; paths relative to the working folder).

def tuning_inputs(e: Experiment, task: str) -> List[str]:
    return [e.bilm, TUNE_CONFIG, e.tuning_text(task), f"{e.corpus(task)}/dev.txt"]


def tuning_outputs(e: Experiment, task: str) -> List[str]:
    return [e.tuned_bilm(task), e.perplexity_file(task, "before"), e.perplexity_file(task, "after")]


def _digests(paths: Sequence[str]) -> Dict[str, Optional[str]]:
    """{path: the digest of its content, None when it is missing}; a model's name is read as its folder."""
    folders = {path: model_folder(path) for path in paths}
    return {path: engine.digest(folder) if folder.exists() else None for path, folder in folders.items()}


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


def tuning_record(e: Experiment, task: str) -> Dict[str, object]:
    """The commands of a task's tuning as ``what_it_makes`` keeps them (not the Python, the threads or the
    progress bar that run them), with the digests of what they read and wrote (None: missing)."""
    return {
        "commands": [what_it_makes(command[1:]) for command in tuning_commands(e, task)],
        "inputs": _digests(tuning_inputs(e, task)),
        "outputs": _digests(tuning_outputs(e, task)),
    }


def start_tuning(e: Experiment, task: str) -> None:
    """Before a tuning's commands run: a tuning folder left by other commands or inputs (another
    text, a changed biLM) is removed, so that `pretrain --resume` starts afresh rather than refusing
    the changed settings (or continuing from weights trained on something else); one left by an
    interrupted run of these same commands and inputs is kept, to resume. The record written here
    says which it is next time; it is complete (``is_tuned``) once the commands have succeeded."""
    planned, stored = tuning_record(e, task), stored_tuning_record(e, task)
    if stored is not None and (stored.get("commands"), stored.get("inputs")) != (planned["commands"], planned["inputs"]):
        shutil.rmtree(e.tuning_dir(task), ignore_errors=True)
    write_atomic(e.tuning_record(task), json.dumps({**planned, "outputs": None}, indent=1) + "\n")


def stored_tuning_record(e: Experiment, task: str) -> Optional[Dict[str, object]]:
    """The record a task's last tuning left (``start_tuning``, ``tune``), its commands read as
    ``tuning_record`` keeps them (``what_it_makes``), or None."""
    try:
        stored = json.loads(Path(e.tuning_record(task)).read_text(encoding="utf-8"))
        commands = stored["commands"]
        return {**stored, "commands": [what_it_makes(command) for command in commands]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_tuned(e: Experiment, task: str) -> bool:
    return stored_tuning_record(e, task) == tuning_record(e, task)


def is_trained(e: Experiment, task: str, variant: str, seed: int) -> bool:
    """The engine's done-check: the seed's record holds the fingerprint of what it would be trained from now."""
    return engine.is_done(engine_run(e, task, variant, seed), Path(e.records))


def plan_jobs(e: Experiment) -> List[Job]:
    """Every job of the experiment, each after the jobs it needs."""
    jobs: List[Job] = []

    def add(name: str, command: List[str], done=None, needs: Sequence[str] = ()) -> str:
        jobs.append(Job(name, tuple(command), Path(e.logs) / f"{name}.log", done=done, needs=tuple(needs)))
        return name

    corpus_ready: Dict[str, List[str]] = {task: [] for task in TASKS}
    tuned: Dict[str, List[str]] = {task: [] for task in TASKS}
    if e.tunes:
        for task in TASKS:
            corpus_ready[task] = [add(f"convert_{task}", convert_command(e, task))]
        for task in TASKS:
            texts = [add(f"text_{task}_{split}", text_command(e, task, split), needs=corpus_ready[task])
                     for split in ("train", "dev")]
            if "elmo" in e.variants and not e.published:
                tuned[task] = [add(f"tune_{task}", tune_command(e, task), done=lambda t=task: is_tuned(e, t),
                                   needs=texts)]
    trained: Dict[Tuple[str, str], List[str]] = {}
    for variant in e.run_variants:
        for task in TASKS:
            needs = corpus_ready[task] + (tuned[task] if variant == "elmo" else [])
            trained[task, variant] = []
            for seed in e.seeds:
                name = f"{task}_{variant}_seed{seed}"
                jobs.append(run_job(engine_run(e, task, variant, seed), Path(e.records), Path(e.work), Path(e.logs),
                                    keep_model=True, name=name, needs=needs, gpu_id=e.gpu_id))
                trained[task, variant].append(name)
    scored = [add(f"scores_{task}_{variant}", scores_command(e, task, variant), needs=trained[task, variant])
              for task in TASKS for variant in e.run_variants]
    add("report", report_command(e), needs=scored)
    return jobs


def missing_inputs(e: Experiment) -> List[str]:
    """What a profile that reuses another's corpora and tuned biLMs lacks (nothing when it tunes its own)."""
    if e.tunes:
        return []
    needed = [f"{e.corpus(task)}/{split}.spacy" for task in TASKS for split in ("train", "dev", "test")]
    if "elmo" in e.variants and not e.published:
        needed += [f"{e.tuned_bilm(task)}/weights.hdf5" for task in TASKS]
    return [path for path in needed if not Path(path).exists()]


# The command line.

class _RunByDefault(TyperGroup):
    """``full [OPTIONS]`` means ``full run [OPTIONS]``."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        if not args or (args[0].startswith("-") and args[0] not in ("--help", "-h")):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_RunByDefault, add_completion=False, help=__doc__.split("\n\n")[0])


def _numbers(text: str) -> Tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.replace(",", " ").split())
    except ValueError:
        raise typer.BadParameter(f"expected whole numbers such as \"0 1 2\", got {text!r}", param_hint="--seeds") from None
    if not seeds:
        raise typer.BadParameter("expected at least one seed, such as \"0 1 2\"", param_hint="--seeds")
    return seeds


def _variants(text: str) -> Tuple[str, ...]:
    variants = tuple(v for v in text.replace(",", " ").split())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise typer.BadParameter(f"expected some of {', '.join(VARIANTS)} (comma-separated), got {text!r}",
                                 param_hint="--variants")
    return tuple(v for v in VARIANTS if v in variants)  # the table's order


def _tune_texts(values: Sequence[str]) -> Tuple[Tuple[str, str], ...]:
    """--tune-text TASK=PATH options as (task, path) pairs; an empty PATH: the training split."""
    pairs = []
    for value in values:
        task, sep, path = value.partition("=")
        if not sep or task not in TASKS:
            raise typer.BadParameter(f"expected TASK=PATH with TASK one of {', '.join(TASKS)}, got {value!r}",
                                     param_hint="--tune-text")
        if path:
            pairs.append((task, path))
    return tuple(pairs)


def experiment(
    profile: str, seeds: str, steps: int, eval_frequency: int, tune_steps: int, bilm: str, gpu_id: int,
    variants: str, reuse_tuned_from: Optional[str], title: Optional[str], published: str = "",
    tune_texts: Sequence[str] = (),
) -> Experiment:
    if reuse_tuned_from and _tune_texts(tune_texts):
        raise typer.BadParameter(f"a profile that reuses {reuse_tuned_from}'s tuned biLMs tunes none: leave "
                                 "--tune-text out, or tune in that profile", param_hint="--tune-text")
    return Experiment(profile=profile, seeds=_numbers(seeds), steps=steps, eval_frequency=eval_frequency,
                      tune_steps=tune_steps, bilm=bilm, gpu_id=gpu_id, variants=_variants(variants),
                      reuse_tuned_from=reuse_tuned_from, title=title, published=published,
                      tune_texts=_tune_texts(tune_texts))


def check_published(e: Experiment) -> None:
    """A published biLM's files are there, or one line saying what to do (exit 1)."""
    if e.published:
        try:
            published_bilm(e.published)
        except ExperimentError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(1)


_DEFAULT = Experiment()
PROFILE = typer.Option(_DEFAULT.profile, help="Name of the experiment: its corpus/, training/, metrics/, "
                                               "reports/ and logs/ folders")
SEEDS = typer.Option(" ".join(map(str, _DEFAULT.seeds)), help="Seeds of the runs")
STEPS = typer.Option(_DEFAULT.steps, min=1, help="Training steps of each run")
EVAL_FREQUENCY = typer.Option(_DEFAULT.eval_frequency, min=1, help="Steps between dev evaluations")
TUNE_STEPS = typer.Option(_DEFAULT.tune_steps, min=1, help="Steps (2,000 tokens each) of the biLM's tuning")
BILM = typer.Option(_DEFAULT.bilm, help="The biLM that is tuned, and that elmo_untuned reads: a model's name or "
                                         "a biLM folder")
GPU_ID = typer.Option(_DEFAULT.gpu_id, help="GPU id, or -1 for the CPU")
VARIANTS_OPTION = typer.Option(",".join(VARIANTS), "--variants", help="Which runs: baseline, elmo (the tuned "
                                                                      "biLM), elmo_untuned")
REUSE = typer.Option(None, help="Read this profile's corpora and tuned biLMs instead of converting and tuning")
TITLE = typer.Option(None, help="Heading of the report (default: \"Profile PROFILE, seeds SEEDS\")")
TUNE_TEXT = typer.Option([], "--tune-text", help="TASK=PATH: tune the biLM for TASK on this unlabelled text "
                                                   "instead of the task's training split (repeatable)")
PUBLISHED_OPTION = typer.Option("", "--published", help=f"A published AllenNLP model ({', '.join(PUBLISHED)}; "
                                                        f"in {PUBLISHED_DIR}/NAME) to read as it is instead of "
                                                        f"--bilm, with no tuning; \"\": --bilm, tuned")


@app.command("run")
def run_cli(
    profile: str = PROFILE, seeds: str = SEEDS, steps: int = STEPS, eval_frequency: int = EVAL_FREQUENCY,
    tune_steps: int = TUNE_STEPS, bilm: str = BILM, gpu_id: int = GPU_ID, variants: str = VARIANTS_OPTION,
    reuse_tuned_from: Optional[str] = REUSE, title: Optional[str] = TITLE, published: str = PUBLISHED_OPTION,
    tune_text: List[str] = TUNE_TEXT,
    jobs: int = typer.Option(2, min=1, help="Jobs side by side (one thread each)"),
    minutes: float = typer.Option(0, min=0, help="Start no job after this many minutes (0 = no limit)"),
) -> None:
    """Run every job of the experiment that is not done yet (the default command)."""
    os.chdir(ROOT)
    e = experiment(profile, seeds, steps, eval_frequency, tune_steps, bilm, gpu_id, variants, reuse_tuned_from, title,
                   published, tune_text)
    check_published(e)
    missing = missing_inputs(e)
    if missing:
        typer.echo(f"--reuse-tuned-from {e.reuse_tuned_from}: {', '.join(missing)} not found. Run "
                   f"`python -m experiments.run.full --profile {e.reuse_tuned_from}` first, or name a profile "
                   f"that has been run.", err=True)
        raise typer.Exit(2)
    Path(e.metrics).mkdir(parents=True, exist_ok=True)
    planned = plan_jobs(e)
    typer.echo(f"{len(planned)} jobs, {jobs} at a time; logs in {e.logs}/")
    with work_lock(Path(e.work)):
        summary = run_jobs(planned, jobs, minutes=minutes or None, cwd=ROOT, env=importable(), follow=True,
                           poll_seconds=0.5)
    typer.echo(summary.describe())
    if not summary.ok:
        raise typer.Exit(1)


@app.command("plan")
def plan_cli(
    profile: str = PROFILE, seeds: str = SEEDS, steps: int = STEPS, eval_frequency: int = EVAL_FREQUENCY,
    tune_steps: int = TUNE_STEPS, bilm: str = BILM, gpu_id: int = GPU_ID, variants: str = VARIANTS_OPTION,
    reuse_tuned_from: Optional[str] = REUSE, title: Optional[str] = TITLE, published: str = PUBLISHED_OPTION,
    tune_text: List[str] = TUNE_TEXT,
) -> None:
    """List the jobs, what each needs and whether it is done ("always": it runs every time)."""
    os.chdir(ROOT)
    e = experiment(profile, seeds, steps, eval_frequency, tune_steps, bilm, gpu_id, variants, reuse_tuned_from, title,
                   published, tune_text)
    planned = plan_jobs(e)
    n_done = 0
    for job in planned:
        done = is_done(job)
        n_done += done
        state = "always" if job.done is None else "done" if done else "todo"
        needs = f"  (after {', '.join(job.needs)})" if job.needs else ""
        typer.echo(f"{state:6}  {job.name}{needs}\n        {shlex.join(['python', *job.command[1:]])}")
    for path in missing_inputs(e):
        typer.echo(f"missing: {path}")
    typer.echo(f"{n_done} of {len(planned)} jobs done")


@app.command("tune", hidden=True)
def tune_cli(
    task: str = typer.Argument(..., help="ner or sentiment5"),
    profile: str = PROFILE, bilm: str = BILM, tune_steps: int = TUNE_STEPS, gpu_id: int = GPU_ID,
    published: str = PUBLISHED_OPTION,
    threads: int = typer.Option(0, min=0, help="Torch threads of the tuning (0: the tuning config's)"),
    tune_text: str = typer.Option("", "--tune-text", help="Unlabelled text to tune on (\"\": the task's "
                                                          "training split)"),
) -> None:
    """Tune the biLM to one task (three commands, in the job's log) and record what it was tuned from.
    With --published: no tuning; the task's biLM folder holds the published model as it is."""
    if task not in TASKS:
        raise typer.BadParameter(f"expected one of {', '.join(TASKS)}, got {task!r}", param_hint="TASK")
    os.chdir(ROOT)
    e = Experiment(profile=profile, bilm=bilm, tune_steps=tune_steps, gpu_id=gpu_id, published=published,
                   threads=threads, tune_texts=((task, tune_text),) if tune_text else ())
    if not e.published and not Path(e.tuning_text(task)).exists():
        typer.echo(f"tuning the biLM to {task}: expected the text to tune on at {e.tuning_text(task)}, found "
                   "nothing. Build it first (the task's training split: its convert step; corpus v2's "
                   "per-source text: `spacy project run prepare-corpus-v2`).", err=True)
        raise typer.Exit(2)
    check_published(e)
    if e.published:
        use_published(e, task)
        typer.echo(f"{e.tuned_bilm(task)}: {e.source_bilm} as it is (a published model is not tuned)")
        return
    Path(e.metrics).mkdir(parents=True, exist_ok=True)
    start_tuning(e, task)
    for command in tuning_commands(e, task):
        typer.echo(f"$ {shlex.join(['python', *command[1:]])}")
        sys.stdout.flush()
        code = subprocess.call(command)
        if code != 0:
            typer.echo(f"tuning the biLM to {task}: the command above exited with status {code}", err=True)
            raise typer.Exit(code)
    write_atomic(e.tuning_record(task), json.dumps(tuning_record(e, task), indent=1) + "\n")


if __name__ == "__main__":
    app()
