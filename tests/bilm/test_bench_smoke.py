import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "bench_bilm.py"


@pytest.mark.slow
def test_quick_benchmark_runs_and_agrees_with_the_reference(tmp_path):
    output = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", "--sentences", "8", "--output", str(output)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "tokens/s" in result.stdout
    report = json.loads(output.read_text())
    small = report["models"]["small"]
    assert report["corpus"]["sentences"] == 8
    assert small["throughput"]["32"] > 0 and small["reference"]["tokens_per_s"] > 0
    assert small["reference"]["max_abs_diff"] <= 1e-5
    assert small["peak_rss_mb"] > 0
    assert 40 < small["mflop_per_token"]["total"] < 50
