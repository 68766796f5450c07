"""Where ELMo helps: learning curves, the GloVe pairs and the part-of-speech layer probe.

    python -m experiments.studies.curves plan                    # the runs, and which are done
    python -m experiments.studies.curves run --jobs 2            # all runs not done yet
    python -m experiments.studies.curves run --jobs 15 --minutes 9   # no new run after 9 minutes

One run = one task, variant, share of the training split and seed: a run of the engine named
``<task>/<variant>/f<share>_seed<seed>``, trained on a nested subset of the training split and scored
on the test split; its record, ``METRICS/<task>/<variant>/f<share>_seed<seed>.json``, keeps the test
scores, the learned layer mix and the split sizes. The engine's launcher runs the runs not done,
``--jobs`` at a time, one CPU thread each, under the lock of ``--work``; a run's log is
``METRICS/logs/<task>/<variant>/f<share>_seed<seed>.log``.

The subsets are nested: a seed's permutation of the training docs is fixed, and a share takes its
first ``ceil(share · n)`` docs, so the 5% docs are among the 10% docs and so on; each is written
when the plan is made. Baseline and ELMo runs of one seed train on the same docs. The ELMo runs
read the shipped biLM, frozen and not tuned to the task.
"""

import math
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Dict, List, Optional, Tuple

import typer

from experiments.engine.plan import jobs_of_runs, run_plan, show_plan
from experiments.engine.run import Run, digest, is_done
from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic
from experiments.studies.cli import finish, parse_seeds_option, study_app
from spacy_elmo.shipped_models import ELMO_EN_SMALL

ROOT = Path(__file__).resolve().parents[2]

SHARES = (0.05, 0.1, 0.25, 0.5, 1.0)
BILM = ELMO_EN_SMALL

# task: (config stem, the component holding the listener)
TASKS = {"ner": ("ner", "ner"), "sentiment5": ("textcat", "textcat"), "pos": ("pos", "tagger")}
# variant: (config suffix, uses ELMo, uses GloVe, fixed probe layer)
VARIANTS = {
    "baseline": ("baseline", False, False, None),
    "elmo": ("elmo", True, False, None),
    "glove": ("baseline", False, True, None),
    "glove_elmo": ("elmo", True, True, None),
    "probe_mix": ("probe", True, False, None),
    "probe_layer0": ("probe", True, False, 0),
    "probe_layer1": ("probe", True, False, 1),
    "probe_layer2": ("probe", True, False, 2),
}
CURVE_TASKS = ("ner", "sentiment5")
FULL_VARIANTS = ("baseline", "elmo", "glove", "glove_elmo")
PROBE_VARIANTS = ("baseline", "probe_mix", "probe_layer0", "probe_layer1", "probe_layer2")
CURVE_VARIANTS = ("baseline", "elmo")


@dataclass(frozen=True)
class Study:
    """The study's settings; paths are read from the working folder."""

    corpus: Path = Path("corpus/curves")  # holds ner/, sentiment5/, pos/ and glove/
    records: Path = Path("metrics/curves")
    work: Path = Path("training/curves")
    curve_seeds: Tuple[int, ...] = (0, 1, 2)
    full_seeds: Tuple[int, ...] = (0, 1, 2, 3, 4)
    shares: Tuple[float, ...] = SHARES
    steps: int = 1000
    eval_frequency: int = 200

    @property
    def logs(self) -> Path:
        return self.records / "logs"


def run_id(task: str, variant: str, share: float, seed: int) -> str:
    return f"{task}/{variant}/f{share:g}_seed{seed}"


def points(study: Study) -> List[Tuple[str, str, float, int]]:
    """(task, variant, share, seed) of every run, in the plan's order: the four GloVe/ELMo variants on the
    whole training split (full_seeds), the POS probe (curve_seeds), then the learning curves (baseline and
    ELMo at every smaller share, curve_seeds), the largest share first."""
    full = [
        (task, variant, 1.0, seed) for seed in study.full_seeds for task in CURVE_TASKS for variant in FULL_VARIANTS
    ]
    probe = [("pos", variant, 1.0, seed) for seed in study.curve_seeds for variant in PROBE_VARIANTS]
    curves = [
        (task, variant, share, seed)
        for share in sorted((s for s in study.shares if s < 1.0), reverse=True)
        for seed in study.curve_seeds
        for task in CURVE_TASKS
        for variant in CURVE_VARIANTS
    ]
    return full + probe + curves


def nested_subset(n_docs: int, share: float, seed: int) -> List[int]:
    """The first ceil(share · n) indices of a seeded permutation, in input order.

    For one seed, a smaller share's subset is always inside a larger one's.
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    order = list(range(n_docs))
    random.Random(seed).shuffle(order)
    return sorted(order[: max(1, math.ceil(share * n_docs))] if n_docs else [])


def subset_path(corpus: Path, task: str, share: float, seed: int) -> Path:
    """The .spacy file of a run's training docs (written once, atomically).

    Its name carries a digest of the training split it was cut from, so a split
    converted again gets new subsets rather than the old ones.
    """
    train = corpus / task / "train.spacy"
    if not train.exists():
        raise ExperimentError(
            train,
            expected=f"the {task} training split",
            found="nothing",
            fix="convert the tasks first (`python -m spacy project run convert-curves`)",
        )
    if share == 1.0:
        return train
    path = corpus / task / "subsets" / f"train_f{share:g}_seed{seed}_{digest(train)[:12]}.spacy"
    if not path.exists():
        from spacy.tokens import DocBin

        docs = _train_docs(train)
        keep = [docs[i] for i in nested_subset(len(docs), share, seed)]
        write_atomic(path, DocBin(docs=keep, store_user_data=True).to_bytes())
    return path


@lru_cache(maxsize=None)
def _train_docs(path: Path) -> list:
    """A training split's docs, read once per process for all its subsets."""
    import spacy
    from spacy.tokens import DocBin

    return list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))


def config_path(task: str, variant: str) -> Path:
    stem, _ = TASKS[task]
    return ROOT / "configs" / f"{stem}_{VARIANTS[variant][0]}.cfg"


def run_overrides(study: Study, task: str, variant: str, train_path: Path) -> Dict[str, object]:
    """The settings that ``spacy train`` gets on top of the run's config, the seed left out."""
    _, component = TASKS[task]
    _, elmo, glove, layer = VARIANTS[variant]
    overrides: Dict[str, object] = {
        "paths.train": str(train_path),
        "paths.dev": str(study.corpus / task / "dev.spacy"),
        "training.max_steps": study.steps,
        "training.eval_frequency": study.eval_frequency,
    }
    if elmo:
        overrides["paths.elmo"] = BILM
    if glove:
        overrides["paths.vectors"] = str(study.corpus / "glove")
        overrides[f"components.{component}.model.tok2vec.embed.include_static_vectors"] = True
    if layer is not None:
        overrides[f"components.{component}.model.tok2vec.mix.layer"] = layer
    return overrides


def make_run(study: Study, task: str, variant: str, share: float, seed: int) -> Run:
    """One run of the study: its config, settings and test split (its training subset written if missing)."""
    train_path = subset_path(study.corpus, task, share, seed)
    return Run(
        id=run_id(task, variant, share, seed),
        config=str(config_path(task, variant)),
        overrides=tuple(run_overrides(study, task, variant, train_path).items()),
        seed=seed,
        test=str(study.corpus / task / "test.spacy"),
        labels={"task": task, "variant": variant, "share": f"{share:g}", "seed": str(seed)},
    )


def plan_runs(study: Study, only: Optional[List[str]] = None) -> List[Run]:
    """Every run of the study in the plan's order (``points``); with ``only``, those whose id starts with one
    of them."""
    return [
        make_run(study, *point)
        for point in points(study)
        if not only or any(run_id(*point).startswith(prefix) for prefix in only)
    ]


# The command line.

app = study_app(__doc__)

CORPUS = typer.Option(Study.corpus, help="Holds ner/, sentiment5/, pos/ and glove/")
METRICS = typer.Option(Study.records, help="Where the runs' records go")
WORK = typer.Option(Study.work, help="Scratch folder of the trainings")
CURVE_SEEDS = typer.Option(" ".join(map(str, Study.curve_seeds)), help="Seeds of the curves and the probe")
FULL_SEEDS = typer.Option(" ".join(map(str, Study.full_seeds)), help="Seeds of the runs on the whole training split")
SHARES_OPTION = typer.Option(" ".join(f"{s:g}" for s in SHARES), "--shares", help="Shares of the training split")
STEPS = typer.Option(Study.steps, help="Training steps per run")
EVAL_FREQUENCY = typer.Option(Study.eval_frequency, help="Steps between dev evaluations")


def study_of(
    corpus: Path,
    metrics: Path,
    work: Path,
    curve_seeds: str,
    full_seeds: str,
    shares: str,
    steps: int,
    eval_frequency: int,
) -> Study:
    """The study the command line describes."""
    return Study(
        corpus=corpus,
        records=metrics,
        work=work,
        curve_seeds=parse_seeds_option(curve_seeds, "--curve-seeds"),
        full_seeds=parse_seeds_option(full_seeds, "--full-seeds"),
        shares=tuple(float(s) for s in shares.split()),
        steps=steps,
        eval_frequency=eval_frequency,
    )


@app.command("plan")
def plan_cli(
    corpus: Path = CORPUS,
    metrics: Path = METRICS,
    work: Path = WORK,
    curve_seeds: str = CURVE_SEEDS,
    full_seeds: str = FULL_SEEDS,
    shares: str = SHARES_OPTION,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
) -> None:
    """List the runs and which are done (a result counts only if trained from today's config, data and biLM)."""
    study = study_of(corpus, metrics, work, curve_seeds, full_seeds, shares, steps, eval_frequency)
    show_plan(jobs_of_runs(plan_runs(study), study.records, study.work, study.logs), typer.echo)


@app.command("run")
def run_cli(
    corpus: Path = CORPUS,
    metrics: Path = METRICS,
    work: Path = WORK,
    curve_seeds: str = CURVE_SEEDS,
    full_seeds: str = FULL_SEEDS,
    shares: str = SHARES_OPTION,
    steps: int = STEPS,
    eval_frequency: int = EVAL_FREQUENCY,
    jobs: int = typer.Option(2, help="Runs side by side (one thread each)"),
    minutes: float = typer.Option(0, help="Start no run after this many minutes (0 = no limit)"),
    only: Annotated[Optional[List[str]], typer.Option(help="Only runs whose name starts with this")] = None,
) -> None:
    """Train and score every run that is not done yet."""
    study = study_of(corpus, metrics, work, curve_seeds, full_seeds, shares, steps, eval_frequency)
    runs = plan_runs(study, only)
    typer.echo(f"{len(runs)} runs, {jobs} at a time")
    summary = run_plan(runs, study.records, study.work, study.logs, jobs=jobs, minutes=minutes or None)
    left = [run for run in plan_runs(study) if not is_done(run, study.records)]
    finish(summary, f"; {len(left)} runs left")


if __name__ == "__main__":
    run_app(app)
