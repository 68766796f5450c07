import json

import pytest
import typer
from typer.testing import CliRunner

from experiments.report import gain_vs_perplexity

from .helpers import write_seed_scores as write_scores


def test_one_point_per_bilm_paired_with_the_baseline(tmp_path):
    write_scores(tmp_path / "base", [0.40, 0.50, 0.45, 0.42])
    write_scores(tmp_path / "weak", [0.38, 0.49, 0.44, 0.40])
    write_scores(tmp_path / "strong", [0.44, 0.53, 0.50, 0.43])
    (tmp_path / "weak.json").write_text(json.dumps({"mean": 300.0, "tokens": 10}))  # spacy_elmo perplexity --output
    (tmp_path / "pretrain.json").write_text(json.dumps({"steps": 5, "dev": {"mean": 120.0}}))  # a tuned run's card
    app = typer.Typer()
    app.command()(gain_vs_perplexity.main)
    output = tmp_path / "gain.png"
    result = CliRunner().invoke(
        app,
        [
            str(output),
            "ents_f",
            str(tmp_path / "base"),
            f"weak={tmp_path / 'weak.json'}:{tmp_path / 'weak'}",
            f"strong={tmp_path / 'pretrain.json'}:{tmp_path / 'strong'}",
        ],
    )
    assert result.exit_code == 0, result.output
    strong, weak = [line for line in result.output.splitlines() if line.startswith(("| strong", "| weak"))]
    assert "| 120.0 |" in strong and "+3.25" in strong and "p 0.12" in strong  # sorted by perplexity
    assert "| 300.0 |" in weak and "-1.50" in weak
    assert output.stat().st_size > 0


def test_a_file_without_a_perplexity_or_a_malformed_point_says_what_is_expected(tmp_path):
    (tmp_path / "other.json").write_text(json.dumps({"forward": 10.0}))
    with pytest.raises(typer.BadParameter, match="records no perplexity"):
        gain_vs_perplexity.perplexity_of(tmp_path / "other.json")
    with pytest.raises(typer.BadParameter, match="LABEL=PERPLEXITY_JSON:METRICS_DIR"):
        gain_vs_perplexity.parse_point("no-equals-sign")


def test_a_damaged_seed_file_is_one_line_naming_it(tmp_path):
    """The command's bad input is one line on stderr and exit 1 (`run_main`), not a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    write_scores(tmp_path / "base", [0.40, 0.50, 0.45, 0.42])
    write_scores(tmp_path / "weak", [0.38, 0.49, 0.44, 0.40])
    (tmp_path / "weak" / "seed1.json").write_text('{"ents_f": 0.4')  # cut in half
    (tmp_path / "weak.json").write_text(json.dumps({"mean": 300.0, "tokens": 10}))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.report.gain_vs_perplexity",
            str(tmp_path / "gain.png"),
            "ents_f",
            str(tmp_path / "base"),
            f"weak={tmp_path / 'weak.json'}:{tmp_path / 'weak'}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "seed1.json" in lines[0], done.stderr
