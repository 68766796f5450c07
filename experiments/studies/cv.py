"""k-fold cross-validation: does ELMo pay, measured over every labelled example of a task.

    python -m experiments.studies.cv run --jobs 1         # every run not done yet, in order
    python -m experiments.studies.cv plan                 # the runs, and which are done
    python -m experiments.studies.cv report               # docs/results/cv/results.{md,json}

A task's labelled data (all 2,394 WNUT-16 tweets; all 10,605 rated RT snippets) is cut once, seeded,
into k folds (the snippets stratified by class); the assignment is kept in
``docs/results/cv/folds/TASK.json`` and read from there from then on. Split i tests on fold i,
picks its model on fold i+1 (dev) and trains on the other k-2 (``corpus/cv/TASK/foldI``). Every
arm trains on the same splits with the same seeds, so every comparison is paired by (fold, seed):

==========  ================================================================  ============
arm         what it adds to the task's baseline config                        tasks
==========  ================================================================  ============
baseline    nothing                                                           ner, sentiment5
elmo        the biLM (``--bilm``, frozen, not tuned to the task)              ner, sentiment5
glove       GloVe 6B 50d as static vectors in the embedding (``--glove``)     ner
glove_elmo  both                                                              ner
elmo_int8   as ``elmo``, the biLM's LSTM products in int8 (``int8-always``)   ner
==========  ================================================================  ============

``elmo_int8`` is not planned unless named (``--arms elmo,elmo_int8``): it asks whether int8
inference (``precision = "int8"``) costs the task anything, paired with ``elmo`` by (fold, seed).

Each run is one ``experiments.engine`` run (``TASK/ARM/foldI/seedS``), trained for ``--steps``
with a dev score every ``--eval-frequency``; its record (test scores, the counts they come from,
its fingerprint, the fold assignment's digest among it) goes to ``docs/results/cv/records``, and a
run whose record matches what it would be trained from now is skipped: the same command resumes (the
engine's launcher, under the lock of ``--work``).
The order is fold-major, so that a stopped study leaves whole pairs: for each fold and seed the
baseline and ELMo runs of NER, then of sentiment (and ``elmo_int8`` when named); the GloVe arms
after all of those.
``experiments.report.cv`` pools the records into the comparisons.

A path given to a command (``--records``, ``--output``, ``--readme``, ``--work``, ``--logs``, ``--bilm``,
``--glove``) is read from the caller's folder; the commands then work from the project's root, where
the study names its own files. ``report`` refuses a records folder that does not exist or holds none of
the planned runs' records, and a ``--readme`` without its results block, before it writes anything.
"""

import json
import os
import random
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import typer

from experiments.engine.plan import jobs_of_runs, run_plan, show_plan
from experiments.engine.run import Run, digest
from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic
from experiments.records import parse_seeds
from experiments.studies.cli import finish, study_app
from spacy_elmo.published_models import is_model_name, model_folder
from spacy_elmo.shipped_models import ELMO_EN_SMALL

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path("docs/results/cv")
RECORDS = RESULTS / "records"
FOLDS = RESULTS / "folds"
CORPUS = Path("corpus/cv")
GLOVE = CORPUS / "glove"
BILM = ELMO_EN_SMALL


@dataclass(frozen=True)
class Task:
    source: str
    pipe: str
    config_stem: str
    arms: Tuple[str, ...]
    stratified: bool


TASKS = {
    "ner": Task("assets/wnut16/ner.txt", "ner", "ner", ("baseline", "elmo", "glove", "glove_elmo", "elmo_int8"), False),
    "sentiment5": Task(
        "assets/rt_snippets/movieReviewSnippets_GroundTruth.txt", "textcat", "textcat", ("baseline", "elmo"), True
    ),
}


class Arm(NamedTuple):
    bilm: bool  # reads the biLM
    glove: bool  # reads GloVe
    precision: Optional[str] = None  # the biLM's arithmetic, where not the config's


ARMS = {
    "baseline": Arm(False, False),
    "elmo": Arm(True, False),
    "glove": Arm(False, True),
    "glove_elmo": Arm(True, True),
    "elmo_int8": Arm(True, False, "int8-always"),
}
DEFAULT_ARMS = ("baseline", "elmo", "glove", "glove_elmo")  # planned unless --arms says otherwise
# The comparisons, in the order their runs are planned: (task, arm A, arm B).
COMPARISONS = (
    ("ner", "baseline", "elmo"),
    ("sentiment5", "baseline", "elmo"),
    ("ner", "glove", "glove_elmo"),
    ("ner", "elmo", "elmo_int8"),
)


@dataclass(frozen=True)
class Study:
    k: int = 10
    seeds: Tuple[int, ...] = (0, 1)
    fold_seed: int = 0
    steps: int = 3000
    eval_frequency: int = 250
    bilm: str = BILM
    glove: str = str(GLOVE)
    tasks: Tuple[str, ...] = tuple(TASKS)
    arms: Tuple[str, ...] = DEFAULT_ARMS
    records: str = str(RECORDS)
    folds: str = str(FOLDS)
    corpus: str = str(CORPUS)


# The folds.


def assign_folds(n: int, k: int, seed: int, strata: Optional[Sequence[str]] = None) -> List[int]:
    """The fold of each of ``n`` examples: a seeded shuffle dealt round-robin into ``k`` folds, so
    fold sizes differ by at most one; with ``strata``, each stratum (in sorted order) is shuffled
    and dealt on from where the last one stopped, so every fold holds each class's share too."""
    if k < 3:
        raise ExperimentError(
            "--k", expected="3 folds or more (one to test, one for dev, the rest to train)", found=str(k)
        )
    if n < k:
        raise ExperimentError("the task's data", expected=f"at least {k} examples for {k} folds", found=str(n))
    rng = random.Random(seed)
    groups: Dict[str, List[int]] = {}
    for i in range(n):
        groups.setdefault(strata[i] if strata is not None else "", []).append(i)
    fold_of = [0] * n
    dealt = 0
    for key in sorted(groups):
        members = groups[key]
        rng.shuffle(members)
        for i in members:
            fold_of[i] = dealt % k
            dealt += 1
    return fold_of


def split_of(fold: int, k: int) -> Dict[str, List[int]]:
    """Which folds split ``fold`` trains, picks its model and tests on: test i, dev i+1, train the rest."""
    dev = (fold + 1) % k
    return {"train": [f for f in range(k) if f not in (fold, dev)], "dev": [dev], "test": [fold]}


def load_task(task: str):
    """The task's labelled docs, in the source's order, and each one's class (None for NER)."""
    import spacy

    source = Path(TASKS[task].source)
    if not source.exists():
        raise ExperimentError(
            source,
            expected=f"the {task} data",
            found="nothing",
            fix="run `python -m spacy project assets`, then `python -m experiments.data.fetch assets`",
        )
    if task == "ner":
        from experiments.convert.ner import make_doc, read_iob_file

        vocab = spacy.blank("en").vocab
        return [make_doc(vocab, tokens, tags) for tokens, tags in read_iob_file(source)], None
    from experiments.convert.sentiment5 import CATEGORIES, rating_to_label, read_rated_snippets

    nlp = spacy.blank("en")
    docs, labels = [], []
    for _id, rating, text in read_rated_snippets(source):
        label = rating_to_label(rating)
        doc = nlp.make_doc(text)
        doc.cats = {category: float(category == label) for category in CATEGORIES}
        docs.append(doc)
        labels.append(label)
    return docs, labels


def folds_path(study: Study, task: str) -> Path:
    return Path(study.folds) / f"{task}.json"


def fold_assignment(study: Study, task: str, n: int, labels: Optional[List[str]]) -> List[int]:
    """The task's recorded fold assignment (cut now and recorded when there is none yet)."""
    path = folds_path(study, task)
    source = TASKS[task].source
    settings = {
        "task": task,
        "source": source,
        "source_sha256": digest(Path(source)),
        "k": study.k,
        "seed": study.fold_seed,
        "stratified": TASKS[task].stratified,
        "n": n,
    }
    if not path.exists():
        fold_of = assign_folds(n, study.k, study.fold_seed, labels if TASKS[task].stratified else None)
        write_atomic(path, json.dumps({**settings, "fold_of": fold_of}) + "\n")
        return fold_of
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ExperimentError(
            path,
            expected="the task's fold assignment (JSON)",
            found=str(err),
            fix="remove it to cut the folds again (every run of the task is then retrained)",
        )
    differs = (
        [key for key, value in settings.items() if stored.get(key) != value] if isinstance(stored, dict) else ["all"]
    )
    if differs:
        raise ExperimentError(
            path,
            expected=f"folds cut with {settings}",
            found=f"other {', '.join(differs)}",
            fix="remove it to cut the folds again (every run of the task is then retrained)",
        )
    fold_of = stored.get("fold_of")
    if (
        not isinstance(fold_of, list)
        or len(fold_of) != n
        or any(f not in range(study.k) for f in fold_of)
        or set(fold_of) != set(range(study.k))
    ):
        raise ExperimentError(
            path,
            expected=f"fold_of: {n} folds numbered 0 to {study.k - 1}, each used",
            found="something else",
            fix="remove it to cut the folds again",
        )
    return fold_of


def split_dir(study: Study, task: str, fold: int) -> Path:
    return Path(study.corpus) / task / f"fold{fold}"


def write_folds(study: Study, task: str) -> None:
    """Each split's train/dev/test.spacy, rewritten only where its bytes would change."""
    from spacy.tokens import DocBin

    docs, labels = load_task(task)
    fold_of = fold_assignment(study, task, len(docs), labels)
    for fold in range(study.k):
        for name, folds in split_of(fold, study.k).items():
            data = DocBin(docs=[d for d, f in zip(docs, fold_of) if f in folds], store_user_data=False).to_bytes()
            path = split_dir(study, task, fold) / f"{name}.spacy"
            if not path.exists() or path.read_bytes() != data:
                write_atomic(path, data)


# The runs.


def make_run(study: Study, task: str, arm: str, fold: int, seed: int) -> Run:
    t = TASKS[task]
    elmo, glove, precision = ARMS[arm]
    split = split_dir(study, task, fold)
    overrides: List[Tuple[str, object]] = [
        ("paths.train", str(split / "train.spacy")),
        ("paths.dev", str(split / "dev.spacy")),
        ("training.max_steps", study.steps),
        ("training.eval_frequency", study.eval_frequency),
    ]
    if elmo:
        overrides.append(("paths.elmo", study.bilm))
    if precision:
        overrides.append(("components.elmo.model.precision", precision))
    if glove:
        overrides += [
            ("paths.vectors", study.glove),
            (f"components.{t.pipe}.model.tok2vec.embed.include_static_vectors", True),
        ]
    return Run(
        id=f"{task}/{arm}/fold{fold}/seed{seed}",
        config=f"configs/{t.config_stem}_{'elmo' if elmo else 'baseline'}.cfg",
        overrides=tuple(overrides),
        seed=seed,
        test=str(split / "test.spacy"),
        inputs=(str(folds_path(study, task)),),
        labels={"task": task, "arm": arm, "fold": str(fold), "seed": str(seed)},
    )


def plan_runs(study: Study) -> List[Run]:
    """Fold-major: each fold and seed's runs of the comparisons without GloVe, then those with GloVe
    likewise; a run in two comparisons once."""
    runs: List[Run] = []
    by_glove = [[c for c in COMPARISONS if ARMS[c[2]].glove == glove] for glove in (False, True)]
    for phase in by_glove:
        for fold in range(study.k):
            for seed in study.seeds:
                for task, a, b in phase:
                    if task not in study.tasks:
                        continue
                    for arm in (a, b):
                        if arm in study.arms and arm in TASKS[task].arms:
                            run = make_run(study, task, arm, fold, seed)
                            if run not in runs:
                                runs.append(run)
    return runs


def prepare(study: Study, echo=typer.echo) -> Study:
    """Cut the folds of each task, and check the biLM and GloVe. Without GloVe vectors the GloVe
    arms are left out (said so)."""
    for task in study.tasks:
        write_folds(study, task)
    if any(ARMS[arm].bilm for arm in study.arms) and not (model_folder(study.bilm) / "weights.hdf5").exists():
        raise ExperimentError(
            study.bilm,
            expected="a model's name, or a biLM folder with options.json and weights.hdf5",
            found="no weights.hdf5",
            fix="name one with --bilm",
        )
    if any(ARMS[arm].glove for arm in study.arms) and not Path(study.glove, "config.cfg").exists():
        echo(
            f"{study.glove} holds no spaCy vectors, so the GloVe arms are left out; to run them: "
            f"`python -m spacy project assets --extra`, `python -m experiments.data.fetch assets --only glove`, "
            f"`python -m experiments.data.glove assets/glove {study.glove}`"
        )
        study = Study(**{**study.__dict__, "arms": tuple(a for a in study.arms if not ARMS[a].glove)})
    return study


# The command line.

app = study_app(__doc__)
WORK = Path("training/cv")
LOGS = Path("logs/cv")


def from_caller(given: Optional[str], default: Path = Path()) -> str:
    """A path option: ``given`` read from the caller's folder, or ``default`` (a path from the project's
    root) when it is not given. The commands work from the project's root, so a path inside it is kept
    relative to the root, as the study names its own files (a run's overrides, and so its fingerprint,
    are the same from any folder); one outside it is made absolute."""
    if given is None:
        return str(default)
    path = Path(os.path.abspath(Path(given).expanduser()))
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _study(
    k: int,
    seeds: str,
    steps: int,
    eval_frequency: int,
    bilm: Optional[str],
    glove: Optional[str],
    tasks: str,
    arms: str,
    records: Optional[str],
) -> Study:
    """The study the options describe, its paths read from the caller's folder (`from_caller`)."""
    seed_list = tuple(parse_seeds(seeds))
    task_list = tuple(t for t in tasks.replace(",", " ").split())
    arm_list = tuple(a for a in arms.replace(",", " ").split())
    if not task_list or any(t not in TASKS for t in task_list):
        raise ExperimentError("--tasks", expected=f"some of {', '.join(TASKS)}", found=repr(tasks))
    if not arm_list or any(a not in ARMS for a in arm_list):
        raise ExperimentError("--arms", expected=f"some of {', '.join(ARMS)}", found=repr(arms))
    bilm = bilm if is_model_name(bilm) else from_caller(bilm, Path(BILM))
    return Study(
        k=k,
        seeds=seed_list,
        steps=steps,
        eval_frequency=eval_frequency,
        bilm=bilm,
        glove=from_caller(glove, GLOVE),
        tasks=task_list,
        arms=arm_list,
        records=from_caller(records, RECORDS),
    )


def path_option(default: Path, help: str, name: Optional[str] = None) -> typer.models.OptionInfo:
    """An option naming a path from the caller's folder; not given, it is ``default`` from the project's root."""
    return typer.Option(None, *([name] if name else []), show_default=str(default), help=help)


K = typer.Option(10, help="Folds")
SEEDS = typer.Option("0 1", help="Seeds of each fold's runs")
STEPS = typer.Option(3000, help="Training steps of each run")
EVAL_FREQUENCY = typer.Option(250, help="Steps between dev evaluations")
BILM_OPTION = path_option(
    Path(BILM), "The biLM of the ELMo arms (frozen, not tuned): a model's name or a folder", "--bilm"
)
GLOVE_OPTION = path_option(GLOVE, "GloVe as spaCy vectors (experiments.data.glove)", "--glove")
TASKS_OPTION = typer.Option(",".join(TASKS), "--tasks", help="Comma-separated: " + ", ".join(TASKS))
ARMS_OPTION = typer.Option(",".join(DEFAULT_ARMS), "--arms", help="Comma-separated: " + ", ".join(ARMS))
RECORDS_OPTION = path_option(RECORDS, "Folder of the runs' records (committed)", "--records")


@app.command("run")
def run_cli(
    k: int = K,
    seeds: str = SEEDS,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
    bilm: Optional[str] = BILM_OPTION,
    glove: Optional[str] = GLOVE_OPTION,
    tasks: str = TASKS_OPTION,
    arms: str = ARMS_OPTION,
    records: Optional[str] = RECORDS_OPTION,
    jobs: int = typer.Option(1, min=1, help="Runs side by side (one thread each)"),
    minutes: float = typer.Option(0, min=0, help="Start no run after this many minutes (0: no limit)"),
    work: Optional[str] = path_option(WORK, "Scratch folder of the trainings"),
    logs: Optional[str] = path_option(LOGS, "Each run's log"),
) -> None:
    """Train and score every run not done yet, in the plan's order (the default command)."""
    study = _study(k, seeds, steps, eval_frequency, bilm, glove, tasks, arms, records)
    work_dir, log_dir = Path(from_caller(work, WORK)), Path(from_caller(logs, LOGS))
    os.chdir(ROOT)
    study = prepare(study)
    runs = plan_runs(study)
    typer.echo(f"{len(runs)} runs, {jobs} at a time; records in {study.records}, logs in {log_dir}/")
    finish(run_plan(runs, Path(study.records), work_dir, log_dir, jobs=jobs, minutes=minutes or None))


@app.command("plan")
def plan_cli(
    k: int = K,
    seeds: str = SEEDS,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
    bilm: Optional[str] = BILM_OPTION,
    glove: Optional[str] = GLOVE_OPTION,
    tasks: str = TASKS_OPTION,
    arms: str = ARMS_OPTION,
    records: Optional[str] = RECORDS_OPTION,
) -> None:
    """List the runs and which are done (a record counts only if made from what would be trained now)."""
    study = _study(k, seeds, steps, eval_frequency, bilm, glove, tasks, arms, records)
    os.chdir(ROOT)
    study = prepare(study)
    show_plan(jobs_of_runs(plan_runs(study), Path(study.records), WORK, LOGS), typer.echo)


@app.command("report")
def report_cli(
    k: int = K,
    seeds: str = SEEDS,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
    bilm: Optional[str] = BILM_OPTION,
    glove: Optional[str] = GLOVE_OPTION,
    tasks: str = TASKS_OPTION,
    arms: str = ARMS_OPTION,
    records: Optional[str] = RECORDS_OPTION,
    output: Optional[str] = path_option(RESULTS, "Where results.md and results.json go"),
    readme: Optional[str] = typer.Option(None, help="Also write the summary block of this README (README.md)"),
    arm_records: List[str] = typer.Option(
        [], "--arm-records", help="ARM=FOLDER: read this arm's records from FOLDER (another study's); repeatable"
    ),
) -> None:
    """Pool the records of the planned runs into each comparison (partial while runs are left); a records
    folder that does not exist or holds none of the planned runs' records is refused, and nothing written."""
    import datetime

    from experiments.report.cv import write_report

    study = _study(k, seeds, steps, eval_frequency, bilm, glove, tasks, arms, records)
    output_dir = Path(from_caller(output, RESULTS))
    readme_path = Path(from_caller(readme)) if readme is not None else None
    folders = {}
    for given in arm_records:
        arm, _, folder = given.partition("=")
        if arm not in study.arms or not folder:
            raise ExperimentError(
                "--arm-records", expected=f"ARM=FOLDER, ARM one of {', '.join(study.arms)}", found=given
            )
        folders[arm] = Path(from_caller(folder))
    source = ""
    if folders or output is not None:
        command = " ".join(shlex.quote(a) for a in sys.argv[1:])
        source = f"Runs: records in {study.records}; this page: `python -m experiments.studies.cv {command}`."
    os.chdir(ROOT)
    write_report(
        plan_runs(study),
        Path(study.records),
        output_dir,
        COMPARISONS,
        readme_path,
        datetime.date.today().isoformat(),
        folders,
        source,
    )


if __name__ == "__main__":
    run_app(app)
