"""The engine's job runner (experiments/engine/jobs.py) on tiny `python -c` jobs."""

import sys
import time
from pathlib import Path

import pytest

from experiments.engine.jobs import Job, check_jobs, run_jobs


def py(tmp_path: Path, name: str, code: str, **kwargs) -> Job:
    return Job(name, (sys.executable, "-c", code), tmp_path / "logs" / f"{name}.log", **kwargs)


def stamping(tmp_path: Path, name: str, seconds: float = 0.0, exit_status: int = 0, **kwargs) -> Job:
    """A job that writes its start and end times to stamps/NAME, sleeps in between, then exits."""
    stamp = tmp_path / "stamps" / name
    code = (
        f"import sys, time; start = time.time(); time.sleep({seconds}); "
        f"open({str(stamp)!r}, 'w').write(f'{{start}} {{time.time()}}'); "
        f"print('the end of {name}'); sys.exit({exit_status})"
    )
    return py(tmp_path, name, code, **kwargs)


def intervals(tmp_path: Path):
    return {p.name: tuple(map(float, p.read_text().split())) for p in (tmp_path / "stamps").iterdir()}


def most_at_once(spans) -> int:
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    return peak


@pytest.fixture
def stamps(tmp_path):
    (tmp_path / "stamps").mkdir()
    return tmp_path


def test_jobs_run_n_at_a_time(stamps):
    jobs = [stamping(stamps, f"job{i}", seconds=0.6) for i in range(5)]
    summary = run_jobs(jobs, 2, echo=lambda line: None)
    assert summary.ok and sorted(summary.ran) == [f"job{i}" for i in range(5)]
    assert most_at_once(intervals(stamps).values()) == 2
    assert (stamps / "logs" / "job3.log").read_text().strip() == "the end of job3"


def test_a_failing_job_is_reported_and_the_others_still_run(stamps):
    lines = []
    jobs = [
        stamping(stamps, "a"),
        stamping(stamps, "broken", exit_status=3),
        stamping(stamps, "c"),
        stamping(stamps, "after_broken", needs=("broken",)),
        stamping(stamps, "after_that", needs=("after_broken",)),
        stamping(stamps, "after_c", needs=("c",)),
    ]
    summary = run_jobs(jobs, 2, echo=lines.append)
    assert not summary.ok
    assert summary.failed == ["broken"]
    assert sorted(summary.ran) == ["a", "after_c", "c"]
    assert summary.blocked == ["after_broken", "after_that"]  # what needs a failed job does not start
    assert sorted(intervals(stamps)) == ["a", "after_c", "broken", "c"]
    failure = next(line for line in lines if line.startswith("FAILED"))
    assert "broken (exit status 3)" in failure and "the end of broken" in failure  # the end of its log
    assert str(stamps / "logs" / "broken.log") in failure
    assert "failed: broken" in summary.describe()


def test_no_job_starts_after_the_deadline(stamps):
    jobs = [stamping(stamps, "first", seconds=1.0), stamping(stamps, "second"), stamping(stamps, "third")]
    started = time.monotonic()
    summary = run_jobs(jobs, 1, minutes=0.3 / 60, echo=lambda line: None)
    assert summary.ran == ["first"]  # it ran to its end
    assert summary.not_started == ["second", "third"]
    assert summary.ok and "2 not started before the deadline" in summary.describe()
    assert sorted(intervals(stamps)) == ["first"]
    assert time.monotonic() - started < 10


def test_a_done_job_is_skipped_and_counts_as_succeeded(stamps):
    jobs = [
        stamping(stamps, "done_already", done=lambda: True),
        stamping(stamps, "todo", done=lambda: False),
        stamping(stamps, "next", needs=("done_already", "todo")),
    ]
    summary = run_jobs(jobs, 2, echo=lambda line: None)
    assert summary.skipped == ["done_already"] and summary.ran == ["todo", "next"]
    assert sorted(intervals(stamps)) == ["next", "todo"]


def test_the_done_check_is_asked_when_the_job_would_start(stamps):
    """A job's result can be made current by the jobs it needs: its check waits for them."""
    made = stamps / "stamps" / "maker"
    jobs = [stamping(stamps, "maker", seconds=0.3), stamping(stamps, "user", done=made.exists, needs=("maker",))]
    summary = run_jobs(jobs, 2, echo=lambda line: None)
    assert summary.ran == ["maker"] and summary.skipped == ["user"]


def test_a_done_check_that_fails_runs_the_job(stamps):
    def broken_check():
        raise ValueError("unreadable record")

    lines = []
    summary = run_jobs([stamping(stamps, "job", done=broken_check)], 1, echo=lines.append)
    assert summary.ran == ["job"]
    assert any("could not tell whether job is done (ValueError: unreadable record)" in line for line in lines)


def test_each_job_runs_on_one_thread_in_the_given_folder(tmp_path):
    job = py(
        tmp_path,
        "env",
        "import os; print(os.environ['OMP_NUM_THREADS'], os.environ['MKL_NUM_THREADS'], "
        "os.environ['EXTRA'], os.getcwd())",
    )
    summary = run_jobs([job], 1, cwd=tmp_path, env={"EXTRA": "x"}, echo=lambda line: None)
    assert summary.ok
    assert job.log.read_text().split() == ["1", "1", "x", str(tmp_path)]


def test_a_command_that_cannot_start_is_a_failure(tmp_path):
    job = Job("missing", (str(tmp_path / "no-such-program"),), tmp_path / "missing.log")
    summary = run_jobs([job, py(tmp_path, "other", "pass")], 1, echo=lambda line: None)
    assert summary.failed == ["missing"] and summary.ran == ["other"]


def test_job_lists_are_checked(tmp_path):
    a = py(tmp_path, "a", "pass")
    with pytest.raises(ValueError, match="Two jobs are named 'a'"):
        check_jobs([a, a])
    with pytest.raises(ValueError, match="needs 'b', which is not a job listed before it"):
        check_jobs([py(tmp_path, "a", "pass", needs=("b",)), py(tmp_path, "b", "pass")])
    with pytest.raises(ValueError, match="n_jobs"):
        run_jobs([a], 0)


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_a_stopped_runner_stops_its_jobs_and_what_they_started(tmp_path, stop):
    """SIGTERM to the runner, or Ctrl-C (SIGINT): the running job and the process it started both end."""
    import os
    import signal
    import subprocess

    pid_file = tmp_path / "grandchild.pid"
    grandchild = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    job_code = f"import subprocess, sys; subprocess.call([sys.executable, '-c', {grandchild!r}])"
    runner_code = (  # Ctrl-C's default handler, as in a terminal (a background shell starts Python with SIGINT ignored)
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from pathlib import Path; from experiments.engine.jobs import Job, run_jobs; "
        f"run_jobs([Job('sleeper', (sys.executable, '-c', {job_code!r}), Path({str(tmp_path / 'sleeper.log')!r}))], 1)"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    runner = subprocess.Popen(
        [sys.executable, "-c", runner_code],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()):
            assert runner.poll() is None and time.monotonic() < deadline, runner.stdout.read() if runner.stdout else ""
            time.sleep(0.05)
        runner.send_signal(getattr(signal, stop))
        output, _ = runner.communicate(timeout=40)
    finally:
        if runner.poll() is None:
            runner.kill()
    pid = int(pid_file.read_text())
    alive = Path(f"/proc/{pid}").exists() and "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    if alive:
        os.kill(pid, signal.SIGKILL)  # the test failed: leave nothing behind
    assert not alive
    assert runner.returncode != 0
    assert "stopping sleeper" in output
    if stop == "SIGTERM":
        assert runner.returncode == 143 and "Traceback" not in output
