"""Launch a study's plan: its jobs (``experiments.engine.jobs``), under the lock of the folder it trains in.

    summary = run_plan(runs, records=Path("docs/results/cv/records"), work=Path("training/cv"),
                       logs=Path("logs/cv"), jobs=1)               # a plan of engine runs alone
    summary = launch(planned, work=Path("training/full"), n_jobs=2)  # engine runs beside other jobs

A plan is a list of jobs in the order they start. Each run of the engine is one (``run_job``: trained,
scored and recorded by ``experiments.engine.execute`` in a process of its own, on one thread, and done
when its record holds its current fingerprint, ``experiments.engine.run.is_done``); a study adds the
other steps it needs (a conversion, a tuning, the score files, a report) as jobs with their own checks
and the jobs they wait for. ``launch`` runs the jobs not done, ``n_jobs`` at a time, so the same call
after a stop does only what is left; each line a job prints (spaCy's progress table among them) goes to
its log and, after the job's name, to this process's output. ``show_plan`` lists the jobs and which are
done.

One launcher at a time trains into a work folder: a second one started on the same folder (the
same command run twice) is refused while the first holds the folder's lock, rather than both
training the same runs into the same places.
"""

import fcntl
import os
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from experiments.engine.jobs import Job, Summary, run_jobs
from experiments.engine.jobs import is_done as job_is_done
from experiments.engine.run import Run, is_done
from experiments.errors import ExperimentError

ROOT = Path(__file__).resolve().parents[2]
POLL_SECONDS = 0.5  # how often the launcher looks at its running jobs (they run for minutes)


def check_unique(runs: Sequence[Run]) -> None:
    seen = set()
    for run in runs:
        if run.id in seen:
            raise ExperimentError(
                "the plan",
                expected="one run per id",
                found=f"two runs named {run.id}",
                fix="give each run of a plan its own id",
            )
        seen.add(run.id)


def run_job(
    run: Run,
    records: Path,
    work: Path,
    logs: Path,
    keep_model: bool = False,
    name: str = "",
    needs: Sequence[str] = (),
    gpu_id: int = -1,
) -> Job:
    """A run as a job (named ``name``, else by the run's id): ``experiments.engine.execute`` in a process
    of its own, done when ``is_done``."""
    command = (
        sys.executable,
        "-m",
        "experiments.engine.execute",
        str(records),
        str(work),
        "--run",
        run.to_json(),
        *(("--keep-model",) if keep_model else ()),
        *(("--gpu-id", str(gpu_id)) if gpu_id >= 0 else ()),
    )
    return Job(
        name or run.id, command, logs / f"{name or run.id}.log", done=lambda: is_done(run, records), needs=tuple(needs)
    )


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
            raise ExperimentError(
                work,
                expected="no other runner training here",
                found=f"process {holder} runs there",
                fix="wait for it, or stop it (its runs resume when started again)",
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def launch(
    jobs: Sequence[Job],
    work: Path,
    n_jobs: int = 1,
    minutes: Optional[float] = None,
    cwd: Optional[Path] = None,
    echo: Callable[[str], None] = print,
) -> Summary:
    """The one launcher: every job not done, ``n_jobs`` at a time, while this process holds ``work``'s lock;
    no job starts after ``minutes`` (None or 0: no deadline)."""
    with work_lock(Path(work)):
        return run_jobs(
            jobs,
            n_jobs=n_jobs,
            minutes=minutes,
            cwd=cwd,
            env=importable(),
            echo=echo,
            follow=True,
            poll_seconds=POLL_SECONDS,
        )


def jobs_of_runs(runs: Sequence[Run], records: Path, work: Path, logs: Path, keep_model: bool = False) -> List[Job]:
    """A plan of engine runs alone: each run a job (``run_job``), in the runs' order; one run per id."""
    check_unique(runs)
    return [run_job(run, records, work, logs, keep_model) for run in runs]


def run_plan(
    runs: Sequence[Run],
    records: Path,
    work: Path,
    logs: Path,
    jobs: int = 1,
    minutes: Optional[float] = None,
    keep_model: bool = False,
    echo: Callable[[str], None] = print,
) -> Summary:
    """Every run not done, ``jobs`` at a time (``launch``); no run starts after ``minutes`` (None: no deadline)."""
    return launch(jobs_of_runs(runs, records, work, logs, keep_model), work, jobs, minutes, echo=echo)


def show_plan(jobs: Sequence[Job], echo: Callable[[str], None] = print, commands: bool = False) -> int:
    """One line per job: done, todo, or always (a job without a done-check runs every time), the jobs it
    waits for, and with ``commands`` its command line; then how many are done. Returns that number."""
    n_done = 0
    for job in jobs:
        done = job_is_done(job, echo)
        n_done += done
        state = "always" if job.done is None else "done" if done else "todo"
        needs = f"  (after {', '.join(job.needs)})" if job.needs else ""
        command = f"\n        {shlex.join(['python', *job.command[1:]])}" if commands else ""
        echo(f"{state:6}  {job.name}{needs}{command}")
    echo(f"{n_done} of {len(jobs)} jobs done")
    return n_done
