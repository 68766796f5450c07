"""Where ELMo helps: learning curves, the GloVe pairs and the part-of-speech layer probe.

One run = one task, variant, share of the training split and seed. Each run
trains with ``spacy train`` on a nested subset of the training split, scores
its model-best on the test split, keeps the learned layer mix, and writes
``METRICS/<task>/<variant>/f<share>_seed<seed>.json``; a run whose file holds
the fingerprint of what it would be trained from now is skipped, so a stopped
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
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Dict, List, Optional

import typer

from experiments.files import write_atomic
from experiments.run.fingerprint import changed, file_digest, run_fingerprint
from experiments.run.jobs import Job, run_jobs

ROOT = Path(__file__).resolve().parents[2]

SHARES = (0.05, 0.1, 0.25, 0.5, 1.0)
BILM = "pretrained/elmo-en-small"

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
    if share == 1.0:
        return train
    path = corpus / task / "subsets" / f"train_f{share:g}_seed{seed}_{file_digest(train)[:12]}.spacy"
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
        overrides["paths.elmo"] = str(ROOT / BILM)
    if glove:
        overrides["paths.vectors"] = str(corpus / "glove")
        overrides[f"components.{component}.model.tok2vec.embed.include_static_vectors"] = True
    if layer is not None:
        overrides[f"components.{component}.model.tok2vec.mix.layer"] = layer
    return overrides


def train_command(run: Run, corpus: Path, output: Path, steps: int, eval_frequency: int, train_path: Path) -> List[str]:
    command = [sys.executable, "-m", "spacy", "train", str(config_path(run)), "--output", str(output), "--gpu-id", "-1"]
    for key, value in run_overrides(run, corpus, steps, eval_frequency, train_path).items():
        command += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
    return command


def current_fingerprint(run: Run, corpus: Path, steps: int, eval_frequency: int) -> Dict[str, str]:
    """What the run would be trained from now (its training subset is written if missing)."""
    train_path = subset_path(corpus, run.task, run.share, run.seed)
    return run_fingerprint(config_path(run), run_overrides(run, corpus, steps, eval_frequency, train_path))


def stored_fingerprint(result: Path) -> Optional[Dict[str, str]]:
    """The fingerprint kept in a run's result file (None when there is no readable one)."""
    try:
        record = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record.get("fingerprint") if isinstance(record, dict) else None


def is_done(run: Run, corpus: Path, metrics: Path, steps: int, eval_frequency: int) -> bool:
    """True when the run's result exists and was trained from exactly what it would be trained from now."""
    stored = stored_fingerprint(metrics / f"{run.name}.json")
    return stored is not None and not changed(stored, current_fingerprint(run, corpus, steps, eval_frequency))


def score_run(model_dir: Path, test_path: Path) -> Dict[str, object]:
    """Test scores (as evaluate_seeds.py) and the learned mix of an ELMo listener."""
    from experiments.run.evaluate_seeds import evaluate_model

    import spacy
    from spacy_elmo.inspect import listener_mixes

    scores = evaluate_model(model_dir, test_path)
    mixes = listener_mixes(spacy.load(model_dir))
    return {"scores": scores, "mixes": mixes}


def do_run(run: Run, corpus: Path, metrics: Path, work: Path, steps: int, eval_frequency: int) -> Optional[float]:
    """Train, score and clean up one run; returns its minutes (None when it was done already).

    ``spacy train`` writes to this process's output (the run's log, when the run is a job).
    """
    result = metrics / f"{run.name}.json"
    fingerprint = current_fingerprint(run, corpus, steps, eval_frequency)
    if not changed(stored_fingerprint(result), fingerprint):
        return None
    started = time.time()
    train_path = subset_path(corpus, run.task, run.share, run.seed)
    output = work / run.name
    shutil.rmtree(output, ignore_errors=True)
    sys.stdout.flush()
    code = subprocess.call(train_command(run, corpus, output, steps, eval_frequency, train_path),
                           stderr=subprocess.STDOUT, cwd=ROOT)
    if code != 0:
        raise RuntimeError(f"{run.name}: spacy train exited with {code}")
    train_minutes = (time.time() - started) / 60
    scored = subprocess.run(
        [sys.executable, "-m", "experiments.run.curves", "score", str(output / "model-best"), str(corpus / run.task / "test.spacy")],
        capture_output=True, text=True, cwd=ROOT,
    )
    if scored.returncode != 0:
        raise RuntimeError(f"{run.name}: scoring failed:\n{scored.stderr[-2000:]}")
    record = json.loads(scored.stdout.strip().splitlines()[-1])
    n_train = _count_docs(train_path)
    record.update(task=run.task, variant=run.variant, share=run.share, seed=run.seed, steps=steps,
                  train_docs=n_train, train_minutes=round(train_minutes, 2),
                  fingerprint=fingerprint)
    write_atomic(result, json.dumps(record, indent=1) + "\n")
    shutil.rmtree(output, ignore_errors=True)
    return (time.time() - started) / 60


def _count_docs(path: Path) -> int:
    from spacy.tokens import DocBin

    return len(DocBin().from_disk(path))


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
    summary = run_jobs(jobs_to_run, jobs, minutes=minutes or None, env=_importable())
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


def _importable() -> Dict[str, str]:
    """The environment under which a job in this folder imports this project's modules."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


@app.command("one", hidden=True)
def one_cli(
    task: str, variant: str, share: float, seed: int,
    corpus: Path = typer.Option(...), metrics: Path = typer.Option(...), work: Path = typer.Option(...),
    steps: int = typer.Option(...), eval_frequency: int = typer.Option(...),
) -> None:
    """Train, score and record one run (a job of `run`)."""
    try:
        took = do_run(Run(task, variant, share, seed), corpus, metrics, work, steps, eval_frequency)
    except RuntimeError as err:
        typer.echo(str(err), err=True)
        raise typer.Exit(1)
    typer.echo(f"done in {took:.1f} min" if took is not None else "done already")


@app.command("score", hidden=True)
def score_cli(model_dir: Path, test_path: Path) -> None:
    """Print one run's scores and mixes as one JSON line (in its own process)."""
    typer.echo(json.dumps(score_run(model_dir, test_path)))


if __name__ == "__main__":
    app()
