"""Where ELMo helps: learning curves, the GloVe pairs and the part-of-speech layer probe.

One run = one task, variant, share of the training split and seed: a run of
the studies' engine (``experiments.engine``) named ``<task>/<variant>/f<share>_seed<seed>``,
trained on a nested subset of the training split and scored on the test split;
its record, ``METRICS/<task>/<variant>/f<share>_seed<seed>.json``, keeps the test
scores, the learned layer mix and the split sizes. A run whose record holds the
fingerprint of what it would be trained from now is skipped, so a stopped
experiment resumes run by run. Runs go side by side, ``--jobs`` at a time, one
CPU thread each (``experiments.run.jobs``, as the `full` experiment's jobs); a
run's log is ``METRICS/logs/<task>/<variant>/f<share>_seed<seed>.log``.

    python -m experiments.run.curves plan                    # the runs, and which are done
    python -m experiments.run.curves run --jobs 2            # all runs not done yet
    python -m experiments.run.curves run --jobs 15 --minutes 9   # no new run after 9 minutes

The subsets are nested: a seed's permutation of the training docs is fixed, and
a share takes its first ``ceil(share · n)`` docs, so the 5% docs are among the
10% docs and so on. Baseline and ELMo runs of one seed train on the same docs.
The ELMo runs read the shipped biLM, frozen and not tuned to the task.
"""
import math
import random
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Dict, List, Optional

import typer

from experiments.engine import run as engine
from experiments.engine.plan import importable
from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic
from experiments.run.jobs import Job, run_jobs
from spacy_elmo.shipped_models import ELMO_EN_SMALL

ROOT = Path(__file__).resolve().parents[2]

SHARES = (0.05, 0.1, 0.25, 0.5, 1.0)
BILM = ELMO_EN_SMALL

# task: (config stem, the component holding the listener, the test metric)
TASKS = {
    "ner": ("ner", "ner", "ents_f"),
    "sentiment5": ("textcat", "textcat", "cats_accuracy"),
    "pos": ("pos", "tagger", "tag_acc"),
}
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


@dataclass(frozen=True)
class Run:
    task: str
    variant: str
    share: float
    seed: int

    @property
    def name(self) -> str:
        return f"{self.task}/{self.variant}/f{self.share:g}_seed{self.seed}"


def plan_runs(curve_seeds: List[int], full_seeds: List[int], shares=SHARES) -> List[Run]:
    """The learning curves (baseline and ELMo at every share, curve_seeds), the four
    GloVe/ELMo variants on the whole training split (full_seeds), and the POS probe."""
    runs = []
    for seed in full_seeds:
        for task in ("ner", "sentiment5"):
            for variant in ("baseline", "elmo", "glove", "glove_elmo"):
                runs.append(Run(task, variant, 1.0, seed))
    for seed in curve_seeds:
        for variant in ("baseline", "probe_mix", "probe_layer0", "probe_layer1", "probe_layer2"):
            runs.append(Run("pos", variant, 1.0, seed))
    for share in sorted((s for s in shares if s < 1.0), reverse=True):
        for seed in curve_seeds:
            for task in ("ner", "sentiment5"):
                for variant in ("baseline", "elmo"):
                    runs.append(Run(task, variant, share, seed))
    return runs


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
        raise ExperimentError(train, expected=f"the {task} training split", found="nothing",
                              fix="convert the tasks first (`python -m spacy project run convert-curves`)")
    if share == 1.0:
        return train
    path = corpus / task / "subsets" / f"train_f{share:g}_seed{seed}_{engine.digest(train)[:12]}.spacy"
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


def config_path(run: Run) -> Path:
    stem, _, _ = TASKS[run.task]
    return ROOT / "configs" / f"{stem}_{VARIANTS[run.variant][0]}.cfg"


def run_overrides(run: Run, corpus: Path, steps: int, eval_frequency: int, train_path: Path) -> Dict[str, object]:
    """The settings that ``spacy train`` gets on top of the run's config."""
    _, component, _ = TASKS[run.task]
    _, elmo, glove, layer = VARIANTS[run.variant]
    overrides: Dict[str, object] = {
        "paths.train": str(train_path), "paths.dev": str(corpus / run.task / "dev.spacy"),
        "system.seed": run.seed, "training.max_steps": steps, "training.eval_frequency": eval_frequency,
    }
    if elmo:
        overrides["paths.elmo"] = BILM
    if glove:
        overrides["paths.vectors"] = str(corpus / "glove")
        overrides[f"components.{component}.model.tok2vec.embed.include_static_vectors"] = True
    if layer is not None:
        overrides[f"components.{component}.model.tok2vec.mix.layer"] = layer
    return overrides


def engine_run(run: Run, corpus: Path, steps: int, eval_frequency: int) -> engine.Run:
    """The run as the engine's: its config, settings and test split (its training subset written if missing)."""
    train_path = subset_path(corpus, run.task, run.share, run.seed)
    overrides = run_overrides(run, corpus, steps, eval_frequency, train_path)
    seed = overrides.pop("system.seed")
    return engine.Run(id=run.name, config=str(config_path(run)), overrides=tuple(overrides.items()), seed=seed,
                      test=str(corpus / run.task / "test.spacy"),
                      labels={"task": run.task, "variant": run.variant, "share": f"{run.share:g}",
                              "seed": str(run.seed)})


def current_fingerprint(run: Run, corpus: Path, steps: int, eval_frequency: int) -> Dict[str, str]:
    """What the run would be trained from now (its training subset is written if missing)."""
    return engine.fingerprint(engine_run(run, corpus, steps, eval_frequency))


def is_done(run: Run, corpus: Path, metrics: Path, steps: int, eval_frequency: int) -> bool:
    """True when the run's record exists and was trained from exactly what it would be trained from now."""
    return engine.is_done(engine_run(run, corpus, steps, eval_frequency), metrics)


def do_run(run: Run, corpus: Path, metrics: Path, work: Path, steps: int, eval_frequency: int) -> Optional[float]:
    """Train, score and record one run through the engine; returns its minutes (None when it was done already)."""
    from experiments.engine.execute import execute

    planned = engine_run(run, corpus, steps, eval_frequency)
    if engine.is_done(planned, metrics):
        return None
    execute(planned, metrics, work)
    return engine.read_record(engine.record_path(metrics, planned.id)).train_minutes


app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


def _seeds(text: str) -> List[int]:
    return [int(s) for s in text.replace(",", " ").split()]


@app.command("plan")
def plan_cli(
    corpus: Path = typer.Option(Path("corpus/curves"), help="Holds ner/, sentiment5/, pos/ and glove/"),
    metrics: Path = typer.Option(Path("metrics/curves"), help="Where the run results go"),
    curve_seeds: str = typer.Option("0 1 2", help="Seeds of the curves and the probe"),
    full_seeds: str = typer.Option("0 1 2 3 4", help="Seeds of the runs on the whole training split"),
    steps: int = typer.Option(1000, help="Training steps per run"),
    eval_frequency: int = typer.Option(200, help="Steps between dev evaluations"),
) -> None:
    """List the runs and which are done (a result counts only if trained from today's config, data and biLM)."""
    runs = plan_runs(_seeds(curve_seeds), _seeds(full_seeds))
    done = [is_done(run, corpus, metrics, steps, eval_frequency) for run in runs]
    for run, run_done in zip(runs, done):
        typer.echo(f"{'done' if run_done else '    '}  {run.name}")
    typer.echo(f"{sum(done)} of {len(runs)} runs done")


@app.command("run")
def run_cli(
    corpus: Path = typer.Option(Path("corpus/curves"), help="Holds ner/, sentiment5/, pos/ and glove/"),
    metrics: Path = typer.Option(Path("metrics/curves"), help="Where the run results go"),
    work: Path = typer.Option(Path("training/curves"), help="Scratch folder of the trainings"),
    curve_seeds: str = typer.Option("0 1 2", help="Seeds of the curves and the probe"),
    full_seeds: str = typer.Option("0 1 2 3 4", help="Seeds of the runs on the whole training split"),
    shares: str = typer.Option(" ".join(f"{s:g}" for s in SHARES), help="Shares of the training split"),
    steps: int = typer.Option(1000, help="Training steps per run"),
    eval_frequency: int = typer.Option(200, help="Steps between dev evaluations"),
    jobs: int = typer.Option(2, help="Runs side by side (one thread each)"),
    minutes: float = typer.Option(0, help="Start no run after this many minutes (0 = no limit)"),
    only: Annotated[Optional[List[str]], typer.Option(help="Only runs whose name starts with this")] = None,
) -> None:
    """Train and score every run that is not done yet."""
    share_list = [float(s) for s in shares.split()]
    runs = [r for r in plan_runs(_seeds(curve_seeds), _seeds(full_seeds), share_list)
            if not only or any(r.name.startswith(o) for o in only)]
    jobs_to_run = [run_job(r, corpus, metrics, work, steps, eval_frequency) for r in runs]
    typer.echo(f"{len(runs)} runs, {jobs} at a time")
    summary = run_jobs(jobs_to_run, jobs, minutes=minutes or None, env=importable(), follow=True, poll_seconds=0.5)
    left = [r for r in plan_runs(_seeds(curve_seeds), _seeds(full_seeds), share_list)
            if not is_done(r, corpus, metrics, steps, eval_frequency)]
    typer.echo(f"{summary.describe()}; {len(left)} runs left")
    if not summary.ok:
        raise typer.Exit(1)


def run_job(run: Run, corpus: Path, metrics: Path, work: Path, steps: int, eval_frequency: int) -> Job:
    """A run as a job: ``curves one`` in its own process, done when its result's fingerprint is current."""
    command = (sys.executable, "-m", "experiments.run.curves", "one", run.task, run.variant, str(run.share),
               str(run.seed), "--corpus", str(corpus), "--metrics", str(metrics), "--work", str(work),
               "--steps", str(steps), "--eval-frequency", str(eval_frequency))
    return Job(run.name, command, metrics / "logs" / f"{run.name}.log",
               done=lambda: is_done(run, corpus, metrics, steps, eval_frequency))


@app.command("one", hidden=True)
def one_cli(
    task: str, variant: str, share: float, seed: int,
    corpus: Path = typer.Option(...), metrics: Path = typer.Option(...), work: Path = typer.Option(...),
    steps: int = typer.Option(...), eval_frequency: int = typer.Option(...),
) -> None:
    """Train, score and record one run (a job of `run`)."""
    try:
        took = do_run(Run(task, variant, share, seed), corpus, metrics, work, steps, eval_frequency)
    except ExperimentError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(f"done in {took:.1f} min" if took is not None else "done already")


if __name__ == "__main__":
    run_app(app)
