import json

import pytest
import typer
from typer.testing import CliRunner

from experiments.report import dev_curves


def write_run(folder, curves, key="ents_f"):
    """One seed folder per curve, each with the train_log.jsonl spaCy's console logger writes
    (scores in percent, as the logger writes them)."""
    for seed, curve in enumerate(curves):
        seed_dir = folder / f"seed{seed}"
        seed_dir.mkdir(parents=True)
        lines = [
            json.dumps({"epoch": 0, "step": step, "losses": {}, "scores": {key: value}, "score": value})
            for step, value in curve.items()
        ]
        (seed_dir / "train_log.jsonl").write_text("\n".join(lines) + "\n")


def test_mean_curve_plateau_and_plot(tmp_path):
    write_run(tmp_path / "base", [{0: 0.0, 250: 30.0, 500: 40.0, 750: 41.0}, {0: 0.0, 250: 20.0, 500: 42.0, 750: 43.0}])
    write_run(tmp_path / "elmo", [{0: 0.0, 250: 35.0, 500: 45.0}])  # stopped early: its steps only
    app = typer.Typer()
    app.command()(dev_curves.main)
    output = tmp_path / "plots" / "curves.png"
    result = CliRunner().invoke(app, [str(output), "ents_f", str(tmp_path / "base"), str(tmp_path / "elmo")])
    assert result.exit_code == 0, result.output
    assert "41.00 ± 1.41 (2)" in result.output  # step 500: mean and sample std of 40 and 42
    assert "base: best mean dev ents_f over all 2 seeds 42.00, within 0.5 of it from step 750" in result.output
    assert "elmo: best mean dev ents_f over all 1 seeds 45.00, within 0.5 of it from step 500" in result.output
    assert output.stat().st_size > 0


def test_a_seed_stopped_early_leaves_fewer_seeds_later_and_the_plateau_uses_the_shared_steps(tmp_path):
    write_run(tmp_path / "run", [{0: 10.0, 250: 20.0, 500: 90.0}, {0: 10.0, 250: 40.0}])
    curve = dev_curves.mean_curve(dev_curves.dev_scores(tmp_path / "run", "ents_f"))
    assert curve[250] == pytest.approx([30.0, 14.142135623730951, 2], rel=1e-9)
    assert curve[500] == [90.0, 0.0, 1]  # one seed left
    assert dev_curves.plateau_step(curve, within=0.5) == 250  # not the one-seed step 500


def test_a_run_without_logs_or_without_the_score_says_what_to_do(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(typer.BadParameter, match="train it with experiments.demo.train_seeds"):
        dev_curves.dev_scores(tmp_path / "empty", "ents_f")
    write_run(tmp_path / "other", [{0: 0.1}], key="cats_macro_f")
    with pytest.raises(typer.BadParameter, match="no dev score 'ents_f'.*cats_macro_f"):
        dev_curves.dev_scores(tmp_path / "other", "ents_f")
