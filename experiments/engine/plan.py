"""Run the runs of a plan that are not done: each a job (``experiments.run.jobs``) of its own.

    summary = run_plan(runs, records=Path("docs/results/cv/records"), work=Path("training/cv"),
                       logs=Path("logs/cv"), jobs=1)

Runs start in the plan's order, ``jobs`` at a time, each in its own process on one thread
(``experiments.engine.execute``); a run whose record holds its current fingerprint is skipped
(``experiments.engine.run.is_done``), so the same call after a stop does only what is left. Each
line a run prints (spaCy's progress table among them) goes to its log and, after the run's id, to
this process's output.

One runner at a time trains into a work folder: a second one started on the same folder (the
same command run twice) is refused while the first holds the folder's lock, rather than both
training the same runs into the same places.
"""
import fcntl
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from experiments.engine.run import Run, is_done
from experiments.errors import ExperimentError
from experiments.run.jobs import Job, Summary, run_jobs

ROOT = Path(__file__).resolve().parents[2]


def check_unique(runs: Sequence[Run]) -> None:
    seen = set()
    for run in runs:
        if run.id in seen:
            raise ExperimentError("the plan", expected="one run per id", found=f"two runs named {run.id}",
                                  fix="give each run of a plan its own id")
        seen.add(run.id)


def run_job(run: Run, records: Path, work: Path, logs: Path, keep_model: bool = False, name: str = "",
            needs: Sequence[str] = (), gpu_id: int = -1) -> Job:
    """A run as a job (named ``name``, else by the run's id): ``experiments.engine.execute`` in a process
    of its own, done when ``is_done``."""
    command = (sys.executable, "-m", "experiments.engine.execute", str(records), str(work), "--run", run.to_json(),
               *(("--keep-model",) if keep_model else ()), *(("--gpu-id", str(gpu_id)) if gpu_id >= 0 else ()))
    return Job(name or run.id, command, logs / f"{name or run.id}.log", done=lambda: is_done(run, records),
               needs=tuple(needs))


def importable() -> dict:
    """The environment under which a job imports this project's modules."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


@contextmanager
def work_lock(work: Path):
    """Hold ``WORK/.lock`` for as long as the runs train there; `ExperimentError` when another process holds it."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / ".lock"
    with open(path, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise ExperimentError(work, expected="no other runner training here", found=f"process {holder} runs there",
                                  fix="wait for it, or stop it (its runs resume when started again)") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_plan(runs: Sequence[Run], records: Path, work: Path, logs: Path, jobs: int = 1,
             minutes: Optional[float] = None, keep_model: bool = False, follow: bool = True,
             echo: Callable[[str], None] = print) -> Summary:
    """Every run not done, ``jobs`` at a time; no run starts after ``minutes`` (None: no deadline)."""
    check_unique(runs)
    planned: List[Job] = [run_job(run, records, work, logs, keep_model) for run in runs]
    with work_lock(work):
        return run_jobs(planned, n_jobs=jobs, minutes=minutes, env=importable(), echo=echo, follow=follow,
                        poll_seconds=0.5)
