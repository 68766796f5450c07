"""The launcher: run a plan's jobs side by side, a few at a time, each in its own process on one thread.

A job is a command line, the file its output goes to, a check that says whether
it is done already, and the names of earlier jobs it needs. ``run_jobs`` starts
the jobs in list order as slots free up, a job only once every job it needs has
succeeded. Just before a job would start its done-check is asked, and a done
job is skipped (it counts as succeeded), so a stopped workflow started again
does only what is left. A done-check must say "done" only for a result made
from what the job would use now (a stored fingerprint, not a file's presence);
a job without one runs every time.

A failing job (exit status other than 0) is reported with the end of its log;
the others go on, and the jobs that need it are not started. After the deadline
no job starts and the running ones finish. The summary names what ran, what was
skipped, what failed and what was left; ``Summary.ok`` is False when a job failed.

Each job runs in a process group of its own. When the runner is stopped (Ctrl-C,
SIGTERM) it hands SIGINT to every running job's group, the processes a job
started included, and kills what is still there after a grace period: no job
keeps running behind a stopped runner.

    jobs = [Job("a", ("python", "-c", "..."), Path("logs/a.log")),
            Job("b", ("python", "-c", "..."), Path("logs/b.log"), done=b_is_done, needs=("a",))]
    summary = run_jobs(jobs, n_jobs=2, minutes=30)
"""

import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# One thread per job: the jobs run side by side, one per core.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
LOG_TAIL_LINES = 8
STOP_GRACE_SECONDS = 30


@dataclass(frozen=True)
class Job:
    """One command line of a workflow.

    done: says whether the job's result is current (None: the job always runs).
    needs: names of earlier jobs that must succeed (or be done) before this one starts.
    """

    name: str
    command: Tuple[str, ...]
    log: Path
    done: Optional[Callable[[], bool]] = field(default=None, compare=False)
    needs: Tuple[str, ...] = ()


@dataclass
class Summary:
    ran: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    failed: List[str] = field(default_factory=list)
    blocked: List[str] = field(default_factory=list)  # a job they need failed
    not_started: List[str] = field(default_factory=list)  # the deadline came first

    @property
    def ok(self) -> bool:
        return not self.failed

    def describe(self) -> str:
        parts = [f"{len(self.ran)} ran", f"{len(self.skipped)} done already"]
        if self.not_started:
            parts.append(f"{len(self.not_started)} not started before the deadline")
        if self.blocked:
            parts.append(f"{len(self.blocked)} not started because a job they need failed: {', '.join(self.blocked)}")
        if self.failed:
            parts.append(f"{len(self.failed)} failed: {', '.join(self.failed)}")
        return "; ".join(parts)


def check_jobs(jobs: Sequence[Job]) -> None:
    """Names are unique and a job needs only jobs listed before it (so there is no cycle)."""
    seen = set()
    for job in jobs:
        if job.name in seen:
            raise ValueError(f"Two jobs are named {job.name!r}: give each job its own name.")
        unknown = [need for need in job.needs if need not in seen]
        if unknown:
            raise ValueError(
                f"Job {job.name!r} needs {', '.join(map(repr, unknown))}, which is not a job listed "
                f"before it: list the jobs a job needs first."
            )
        seen.add(job.name)


def is_done(job: Job, echo: Callable[[str], None] = print) -> bool:
    """The job's done-check; a check that fails counts as "not done" (the job then runs and shows the error)."""
    if job.done is None:
        return False
    try:
        return bool(job.done())
    except Exception as err:  # noqa: BLE001 - any failure to tell means "run it"
        echo(f"could not tell whether {job.name} is done ({type(err).__name__}: {err}); running it")
        return False


def run_jobs(
    jobs: Sequence[Job],
    n_jobs: int,
    minutes: Optional[float] = None,
    cwd: Optional[Path] = None,
    env: Optional[Mapping[str, str]] = None,
    echo: Callable[[str], None] = print,
    poll_seconds: float = 0.05,
    follow: bool = False,
) -> Summary:
    """Run ``jobs`` ``n_jobs`` at a time (see the module's docstring); no job starts after
    ``minutes`` (None or 0: no deadline). Each gets ``os.environ``, one thread and ``env``.
    With ``follow``, each line a running job writes to its log is echoed too, after its name."""
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be 1 or more, got {n_jobs}")
    check_jobs(jobs)
    deadline = time.monotonic() + minutes * 60 if minutes else None
    job_env = {**os.environ, **ONE_THREAD, **(env or {})}
    summary = Summary()
    status: Dict[str, str] = {}  # name -> "ok" | "failed"
    pending = list(jobs)
    running: Dict[str, Tuple[Job, subprocess.Popen, IO, float]] = {}
    followed: Dict[str, _Follower] = {}
    try:
        with _terminate_raises():
            while pending or running:
                for name, (job, process, log, started) in list(running.items()):
                    code = process.poll()
                    if name in followed:
                        followed[name].echo_new(echo)
                    if code is None:
                        continue
                    followed.pop(name, None)
                    log.close()
                    del running[name]
                    took = (time.monotonic() - started) / 60
                    if code == 0:
                        status[name] = "ok"
                        summary.ran.append(name)
                        echo(f"done    {name} in {took:.1f} min")
                    else:
                        status[name] = "failed"
                        summary.failed.append(name)
                        echo(
                            f"FAILED  {name} (exit status {code}) after {took:.1f} min; its log, {job.log}, "
                            f"ends:\n" + _tail(job.log)
                        )
                for job in list(pending):
                    if any(status.get(need) == "failed" for need in job.needs):
                        pending.remove(job)
                        status[job.name] = "failed"  # what needs it cannot run either
                        summary.blocked.append(job.name)
                past_deadline = deadline is not None and time.monotonic() > deadline
                while pending and len(running) < n_jobs and not past_deadline:
                    job = next((j for j in pending if all(status.get(n) == "ok" for n in j.needs)), None)
                    if job is None:
                        break
                    pending.remove(job)
                    if is_done(job, echo):
                        status[job.name] = "ok"
                        summary.skipped.append(job.name)
                        echo(f"skip    {job.name} (done)")
                        continue
                    job.log.parent.mkdir(parents=True, exist_ok=True)
                    log = open(job.log, "wb")
                    try:
                        process = subprocess.Popen(
                            list(job.command),
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL,
                            cwd=cwd,
                            env=job_env,
                            start_new_session=True,
                            preexec_fn=_default_sigint,
                        )
                    except OSError as err:
                        log.close()
                        status[job.name] = "failed"
                        summary.failed.append(job.name)
                        echo(f"FAILED  {job.name}: could not start {job.command[0]!r} ({err})")
                        continue
                    running[job.name] = (job, process, log, time.monotonic())
                    echo(f"start   {job.name}")
                    if follow:
                        followed[job.name] = _Follower(job.name, job.log)
                if past_deadline and not running:
                    summary.not_started += [job.name for job in pending]
                    pending.clear()
                if running:
                    time.sleep(poll_seconds)
    finally:  # stopped, or an error here: no job is left running behind us
        if running:
            echo(f"stopping {', '.join(running)}")
            _stop([process for _, process, _, _ in running.values()])
            for _, _, log, _ in running.values():
                log.close()
    return summary


class _Follower:
    """Echoes the complete lines added to a job's log since the last look, each after the job's name."""

    def __init__(self, name: str, log: Path) -> None:
        self.name, self.log, self.offset, self.rest = name, log, 0, b""

    def echo_new(self, echo: Callable[[str], None]) -> None:
        try:
            with open(self.log, "rb") as file:
                file.seek(self.offset)
                data = file.read()
        except OSError:
            return
        self.offset += len(data)
        lines = (self.rest + data).replace(b"\r", b"\n").split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            if line.strip():
                echo(f"  {self.name} | {line.decode('utf-8', errors='replace')}")


class Terminated(SystemExit):
    """The runner got SIGTERM: it exits as a process killed by SIGTERM would (status 143), once its jobs are stopped."""


@contextmanager
def _terminate_raises():
    """SIGTERM raises ``Terminated`` (so the running jobs are stopped) while the runner runs in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise Terminated(128 + signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _default_sigint() -> None:
    """In a job, before it starts: Ctrl-C's default action. A runner started in the background
    by a shell inherits SIGINT ignored, and would hand that on, so the SIGINT of `_stop` would
    not reach its jobs."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(processes: Sequence[subprocess.Popen]) -> None:
    """SIGINT to each job's process group, as Ctrl-C would; SIGKILL to what is left after the grace period."""
    for process in processes:
        _signal_group(process, signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        _signal_group(process, signal.SIGKILL)  # the job's own children too, should any outlive it
        process.wait()


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "        (no log)"
    return "\n".join(f"        {line}" for line in text.rstrip().splitlines()[-lines:])
