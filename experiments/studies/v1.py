"""The v1 study: ELMo against the baseline on NER and 5-class sentiment over seeds, the biLM tuned to each task.

    python -m experiments.studies.v1 --jobs 2                 # the whole study, two jobs at a time
    python -m experiments.studies.v1 --gpu-id 0 --jobs 24     # one GPU, many cores
    python -m experiments.studies.v1 plan                     # the jobs, and which are done
    python -m experiments.studies.v1 --profile long --steps 3000 --eval-frequency 500 --seeds "0 1 2" \\
        --variants baseline,elmo --reuse-tuned-from full      # longer training on full's corpora and biLMs

The demo's steps at full size, as one plan (``plan_jobs``), in order:

1. convert WNUT-16 NER and the 5-class Rotten Tomatoes sentiment task into
   ``corpus/PROFILE/{ner,sentiment5}``, and each task's train and dev text into .txt;
2. tune the biLM (``--bilm``: a model's name, ``elmo-en-small`` by default, or a biLM folder) to each
   task's training text, or to unlabelled text of the task's domain (``--tune-text TASK=PATH``), for
   ``--tune-steps`` steps: ``experiments.demo.tune``, which also measures its perplexity before and after;
3. train each task and seed with each variant: ``baseline`` (no ELMo), ``elmo`` (the tuned biLM) and
   ``elmo_untuned`` (the biLM as given), and score it on the test split: a run of the engine named
   ``TASK_VARIANT/seedN``, its record in ``metrics/PROFILE/records``, its pipeline kept in
   ``training/PROFILE/TASK_VARIANT/seedN``;
4. write each variant's per-seed score files from the records (``metrics/PROFILE/TASK_VARIANT``,
   ``experiments.engine.views``);
5. write the report (``reports/PROFILE``).

``--reuse-tuned-from OTHER`` skips steps 1 and 2 and reads OTHER's corpora and tuned biLMs.
``--published NAME`` uses one of the published AllenNLP models (``assets/published/NAME``,
``spacy project assets --extra``) instead of ``--bilm``, as it is: no tuning (step 2), and
the ``elmo`` runs read it directly (``elmo_untuned`` would be the same runs, so it is left out).
The engine's launcher runs the jobs ``--jobs`` at a time, one thread each, a job as soon as what it
needs is done; logs go to ``logs/PROFILE/JOB.log``. Paths are relative to the project folder, where
every job runs.

Resumable: a job whose result is current is skipped, so a stopped study continues where it was, and
nothing made from other inputs is kept. A training run is done when its record holds its current
fingerprint (the engine's one check); a tuning when its record holds the same commands and the digests
of its inputs and outputs as they are now (``experiments.demo.tune.is_tuned``). The conversions, score
files and the report are cheap and run every time; their outputs are deterministic, so the digests that
the fingerprints compare do not move.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import typer

from experiments.data.inputs import exit_on_bad_input
from experiments.data.published import PUBLISHED, PUBLISHED_DIR, published_bilm
from experiments.demo.tune import TASKS, Tuning, is_tuned, job_command
from experiments.engine.jobs import Job
from experiments.engine.plan import launch, run_job, show_plan
from experiments.engine.run import Run, overrides_from_args
from experiments.errors import run_app
from experiments.studies.cli import finish, parse_seeds_option, study_app
from spacy_elmo.shipped_models import ELMO_EN_SMALL

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
MODULE = "experiments.studies.v1"

VARIANTS = ("baseline", "elmo", "elmo_untuned")
# task: (converter module, its input under the project folder, the stem of the task's configs)
SOURCES = {
    "ner": ("experiments.convert.ner", "assets/wnut16/ner.txt", "ner"),
    "sentiment5": (
        "experiments.convert.sentiment5",
        "assets/rt_snippets/movieReviewSnippets_GroundTruth.txt",
        "textcat",
    ),
}
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Study:
    """The settings of one profile of the study; every path is relative to the project folder."""

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

    def tuning(self, task: str) -> Tuning:
        """The biLM's tuning to ``task``, in the profile whose tuned biLMs the runs read."""
        return Tuning(
            task=task,
            profile=self.data_profile,
            bilm=self.bilm,
            steps=self.tune_steps,
            gpu_id=self.gpu_id,
            text=dict(self.tune_texts).get(task, ""),
            published=self.published,
        )

    def bilm_of(self, task: str, variant: str) -> Optional[str]:
        """The biLM a variant's runs read (None: no ELMo)."""
        tuned = self.source_bilm if self.published else self.tuning(task).model
        return {"baseline": None, "elmo": tuned, "elmo_untuned": self.source_bilm}[variant]

    def config(self, task: str, variant: str) -> str:
        return f"configs/{SOURCES[task][2]}_{'baseline' if variant == 'baseline' else 'elmo'}.cfg"

    @property
    def report_title(self) -> str:
        return self.title or f"Profile {self.profile}, seeds {' '.join(map(str, self.seeds))}"


def convert_command(study: Study, task: str) -> List[str]:
    module, source, _ = SOURCES[task]
    return [PYTHON, "-m", module, source, study.corpus(task)]


def text_command(study: Study, task: str, split: str) -> List[str]:
    corpus = study.corpus(task)
    return [PYTHON, "-m", "experiments.convert.task_text", f"{corpus}/{split}.spacy", f"{corpus}/{split}.txt"]


def train_overrides(study: Study, task: str, variant: str) -> List[str]:
    """The ``spacy train`` settings of a run, as command-line arguments."""
    corpus = study.corpus(task)
    args = [
        "--paths.train",
        f"{corpus}/train.spacy",
        "--paths.dev",
        f"{corpus}/dev.spacy",
        "--training.max_steps",
        str(study.steps),
        "--training.eval_frequency",
        str(study.eval_frequency),
    ]
    bilm = study.bilm_of(task, variant)
    return args + (["--paths.elmo", bilm] if bilm else [])


def make_run(study: Study, task: str, variant: str, seed: int) -> Run:
    """One seed of a task's variant, as the engine trains, scores and records it: ``TASK_VARIANT/seedN``."""
    return Run(
        id=f"{task}_{variant}/seed{seed}",
        config=study.config(task, variant),
        overrides=tuple(overrides_from_args(train_overrides(study, task, variant)).items()),
        seed=seed,
        test=f"{study.corpus(task)}/test.spacy",
        labels={"task": task, "variant": variant, "seed": str(seed)},
    )


def scores_command(study: Study, task: str, variant: str) -> List[str]:
    """The per-seed score files of a variant's runs, from their records, for the report."""
    return [
        PYTHON,
        "-m",
        "experiments.engine.views",
        study.records,
        study.metrics,
        *(make_run(study, task, variant, seed).id for seed in study.seeds),
    ]


def report_command(study: Study) -> List[str]:
    return [
        PYTHON,
        "-m",
        "experiments.report.comparison",
        study.metrics,
        study.work,
        f"reports/{study.profile}",
        "--title",
        study.report_title,
    ]


def plan_jobs(study: Study) -> List[Job]:
    """Every job of the study, each after the jobs it needs."""
    jobs: List[Job] = []

    def add(name: str, command: List[str], done=None, needs: Sequence[str] = ()) -> str:
        jobs.append(Job(name, tuple(command), Path(study.logs) / f"{name}.log", done=done, needs=tuple(needs)))
        return name

    corpus_ready: Dict[str, List[str]] = {task: [] for task in TASKS}
    tuned: Dict[str, List[str]] = {task: [] for task in TASKS}
    if study.tunes:
        for task in TASKS:
            corpus_ready[task] = [add(f"convert_{task}", convert_command(study, task))]
        for task in TASKS:
            texts = [
                add(f"text_{task}_{split}", text_command(study, task, split), needs=corpus_ready[task])
                for split in ("train", "dev")
            ]
            if "elmo" in study.variants and not study.published:
                tuning = study.tuning(task)
                tuned[task] = [add(f"tune_{task}", job_command(tuning), done=lambda t=tuning: is_tuned(t), needs=texts)]
    trained: Dict[Tuple[str, str], List[str]] = {}
    for variant in study.run_variants:
        for task in TASKS:
            needs = corpus_ready[task] + (tuned[task] if variant == "elmo" else [])
            trained[task, variant] = []
            for seed in study.seeds:
                name = f"{task}_{variant}_seed{seed}"
                jobs.append(
                    run_job(
                        make_run(study, task, variant, seed),
                        Path(study.records),
                        Path(study.work),
                        Path(study.logs),
                        keep_model=True,
                        name=name,
                        needs=needs,
                        gpu_id=study.gpu_id,
                    )
                )
                trained[task, variant].append(name)
    scored = [
        add(f"scores_{task}_{variant}", scores_command(study, task, variant), needs=trained[task, variant])
        for task in TASKS
        for variant in study.run_variants
    ]
    add("report", report_command(study), needs=scored)
    return jobs


def missing_inputs(study: Study) -> List[str]:
    """What a profile that reuses another's corpora and tuned biLMs lacks (nothing when it tunes its own)."""
    if study.tunes:
        return []
    needed = [f"{study.corpus(task)}/{split}.spacy" for task in TASKS for split in SPLITS]
    if "elmo" in study.variants and not study.published:
        needed += [f"{study.tuning(task).model}/weights.hdf5" for task in TASKS]
    return [path for path in needed if not Path(path).exists()]


# The command line.

app = study_app(__doc__)


def parse_variants(text: str) -> Tuple[str, ...]:
    variants = tuple(v for v in text.replace(",", " ").split())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise typer.BadParameter(
            f"expected some of {', '.join(VARIANTS)} (comma-separated), got {text!r}", param_hint="--variants"
        )
    return tuple(v for v in VARIANTS if v in variants)  # the table's order


def parse_tune_texts(values: Sequence[str]) -> Tuple[Tuple[str, str], ...]:
    """--tune-text TASK=PATH options as (task, path) pairs; an empty PATH: the training split."""
    pairs = []
    for value in values:
        task, sep, path = value.partition("=")
        if not sep or task not in TASKS:
            raise typer.BadParameter(
                f"expected TASK=PATH with TASK one of {', '.join(TASKS)}, got {value!r}", param_hint="--tune-text"
            )
        if path:
            pairs.append((task, path))
    return tuple(pairs)


def study_of(
    profile: str,
    seeds: str,
    steps: int,
    eval_frequency: int,
    tune_steps: int,
    bilm: str,
    gpu_id: int,
    variants: str,
    reuse_tuned_from: Optional[str],
    title: Optional[str],
    published: str = "",
    tune_texts: Sequence[str] = (),
) -> Study:
    """The study the command line describes, its options checked."""
    if reuse_tuned_from and parse_tune_texts(tune_texts):
        raise typer.BadParameter(
            f"a profile that reuses {reuse_tuned_from}'s tuned biLMs tunes none: leave "
            "--tune-text out, or tune in that profile",
            param_hint="--tune-text",
        )
    return Study(
        profile=profile,
        seeds=parse_seeds_option(seeds),
        steps=steps,
        eval_frequency=eval_frequency,
        tune_steps=tune_steps,
        bilm=bilm,
        gpu_id=gpu_id,
        variants=parse_variants(variants),
        reuse_tuned_from=reuse_tuned_from,
        title=title,
        published=published,
        tune_texts=parse_tune_texts(tune_texts),
    )


_DEFAULT = Study()
PROFILE = typer.Option(
    _DEFAULT.profile, help="Name of the study's profile: its corpus/, training/, metrics/, reports/ and logs/ folders"
)
SEEDS = typer.Option(" ".join(map(str, _DEFAULT.seeds)), help="Seeds of the runs")
STEPS = typer.Option(_DEFAULT.steps, min=1, help="Training steps of each run")
EVAL_FREQUENCY = typer.Option(_DEFAULT.eval_frequency, min=1, help="Steps between dev evaluations")
TUNE_STEPS = typer.Option(_DEFAULT.tune_steps, min=1, help="Steps (2,000 tokens each) of the biLM's tuning")
BILM = typer.Option(
    _DEFAULT.bilm, help="The biLM that is tuned, and that elmo_untuned reads: a model's name or a biLM folder"
)
GPU_ID = typer.Option(_DEFAULT.gpu_id, help="GPU id, or -1 for the CPU")
VARIANTS_OPTION = typer.Option(
    ",".join(VARIANTS), "--variants", help="Which runs: baseline, elmo (the tuned biLM), elmo_untuned"
)
REUSE = typer.Option(None, help="Read this profile's corpora and tuned biLMs instead of converting and tuning")
TITLE = typer.Option(None, help='Heading of the report (default: "Profile PROFILE, seeds SEEDS")')
TUNE_TEXT = typer.Option(
    [],
    "--tune-text",
    help="TASK=PATH: tune the biLM for TASK on this unlabelled text instead of the task's training split (repeatable)",
)
PUBLISHED_OPTION = typer.Option(
    "",
    "--published",
    help=f"A published AllenNLP model ({', '.join(PUBLISHED)}; "
    f"in {PUBLISHED_DIR}/NAME) to read as it is instead of "
    f'--bilm, with no tuning; "": --bilm, tuned',
)


@app.command("run")
def run_cli(
    profile: str = PROFILE,
    seeds: str = SEEDS,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
    tune_steps: int = TUNE_STEPS,
    bilm: str = BILM,
    gpu_id: int = GPU_ID,
    variants: str = VARIANTS_OPTION,
    reuse_tuned_from: Optional[str] = REUSE,
    title: Optional[str] = TITLE,
    published: str = PUBLISHED_OPTION,
    tune_text: List[str] = TUNE_TEXT,
    jobs: int = typer.Option(2, min=1, help="Jobs side by side (one thread each)"),
    minutes: float = typer.Option(0, min=0, help="Start no job after this many minutes (0 = no limit)"),
) -> None:
    """Run every job of the study that is not done yet (the default command)."""
    os.chdir(ROOT)
    study = study_of(
        profile,
        seeds,
        steps,
        eval_frequency,
        tune_steps,
        bilm,
        gpu_id,
        variants,
        reuse_tuned_from,
        title,
        published,
        tune_text,
    )
    if study.published:
        with exit_on_bad_input():
            published_bilm(study.published)
    missing = missing_inputs(study)
    if missing:
        typer.echo(
            f"--reuse-tuned-from {study.reuse_tuned_from}: {', '.join(missing)} not found. Run "
            f"`python -m {MODULE} --profile {study.reuse_tuned_from}` first, or name a profile "
            f"that has been run.",
            err=True,
        )
        raise typer.Exit(2)
    Path(study.metrics).mkdir(parents=True, exist_ok=True)
    planned = plan_jobs(study)
    typer.echo(f"{len(planned)} jobs, {jobs} at a time; logs in {study.logs}/")
    finish(launch(planned, Path(study.work), jobs, minutes or None, cwd=ROOT))


@app.command("plan")
def plan_cli(
    profile: str = PROFILE,
    seeds: str = SEEDS,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
    tune_steps: int = TUNE_STEPS,
    bilm: str = BILM,
    gpu_id: int = GPU_ID,
    variants: str = VARIANTS_OPTION,
    reuse_tuned_from: Optional[str] = REUSE,
    title: Optional[str] = TITLE,
    published: str = PUBLISHED_OPTION,
    tune_text: List[str] = TUNE_TEXT,
) -> None:
    """List the jobs, what each needs and whether it is done ("always": it runs every time)."""
    os.chdir(ROOT)
    study = study_of(
        profile,
        seeds,
        steps,
        eval_frequency,
        tune_steps,
        bilm,
        gpu_id,
        variants,
        reuse_tuned_from,
        title,
        published,
        tune_text,
    )
    for path in missing_inputs(study):
        typer.echo(f"missing: {path}")
    show_plan(plan_jobs(study), typer.echo, commands=True)


if __name__ == "__main__":
    run_app(app)
