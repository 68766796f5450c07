"""The staged-training picture: each stage's steps follow the stages before it."""

import json

import pytest
import typer
from typer.testing import CliRunner

from experiments.report.stages import chain, main


def log(*steps, dev=()):
    return (
        [{"kind": "train", "step": s, "ppl": 100.0 - s} for s in steps]
        + [{"kind": "dev", "step": s, "ppl": 90.0, "ppl_forward": 91.0, "ppl_backward": 89.0} for s in dev]
        + [{"kind": "stopped", "reason": "max_steps"}]
    )


def test_stages_are_placed_one_after_another():
    records, starts = chain([log(10, 20, dev=[20]), log(10, 30, dev=[15, 30]), log(5)])
    assert starts == [0, 20, 50]
    assert [(r["kind"], r["step"]) for r in records] == [
        ("train", 10),
        ("train", 20),
        ("dev", 20),
        ("train", 30),
        ("train", 50),
        ("dev", 35),
        ("dev", 50),
        ("train", 55),
    ]
    assert records[3]["ppl"] == 90.0  # the record itself is kept, only its step moves


def test_a_stage_that_logged_nothing_is_refused():
    with pytest.raises(ValueError, match="has that run started"):
        chain([log(10), [{"kind": "stopped"}]])


def test_the_command_writes_the_picture(tmp_path):
    for name, records in (("a", log(10, 20, dev=[20])), ("b", log(10, dev=[10]))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    runner = CliRunner()
    result = runner.invoke(_app(), [str(tmp_path / "out.png"), str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "2 stages, 30 steps in all; stages start at 0, 20" in result.output
    assert (tmp_path / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(typer.BadParameter, match="holds no log.jsonl"):
        main(tmp_path / "x.png", [tmp_path / "a", tmp_path / "none"], title="")
    assert not (tmp_path / "x.png").exists()


def _app():
    app = typer.Typer()
    app.command()(main)
    return app
