"""The results table over seeds (``experiments.report.comparison``), as the workflow runs it."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_comparison(tmp_path: Path, seeds: dict) -> subprocess.CompletedProcess:
    for run, scores in seeds.items():
        (tmp_path / "metrics" / run).mkdir(parents=True)
        for seed, score in enumerate(scores):
            path = tmp_path / "metrics" / run / f"seed{seed}.json"
            path.write_text(score if isinstance(score, str) else json.dumps({"ents_f": score}))
    (tmp_path / "training").mkdir()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.report.comparison",
            str(tmp_path / "metrics"),
            str(tmp_path / "training"),
            str(tmp_path / "report"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )


def test_the_table_states_a_monte_carlo_p_with_its_error(tmp_path):
    from experiments.report import comparison

    base = [0.40 + 0.01 * (k % 7) for k in range(20)]
    for run, scores in {"ner_baseline": base, "ner_elmo": [b + 0.02 for b in base]}.items():
        (tmp_path / run).mkdir()
        for seed, score in enumerate(scores):
            (tmp_path / run / f"seed{seed}.json").write_text(json.dumps({"ents_f": score}))
    scores = comparison.collect_scores(tmp_path)
    assert "± 0.0000 (Monte Carlo)" in comparison.markdown_table(scores, None)
    gain = comparison.gains(scores["ner"], "elmo")
    assert gain["pairs"] == 20 and gain["sign_flip_method"].startswith("monte carlo")


def test_a_damaged_seed_file_is_one_line(tmp_path):
    result = run_comparison(tmp_path, {"ner_baseline": [0.4, 0.5], "ner_elmo": [0.45, '{"ents_f": 0.5, "ents']})
    assert result.returncode == 1
    bad = tmp_path / "metrics" / "ner_elmo" / "seed1.json"
    assert result.stderr.startswith(f"error: {bad}: expected a seed's scores") and result.stderr.count("\n") == 1
