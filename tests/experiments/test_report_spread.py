"""The collapse check of experiments/report/spread.py."""

import numpy
import pytest

from experiments.report.spread import spread


def test_collapsed_vectors_have_a_mean_cosine_near_one_and_spread_ones_do_not():
    rng = numpy.random.default_rng(1)
    spread_out = rng.normal(size=(500, 64))
    collapsed = numpy.ones((500, 64)) * 3.0 + 0.01 * rng.normal(size=(500, 64))
    assert abs(spread(spread_out)["mean_cosine"]) < 0.05
    assert spread(collapsed)["mean_cosine"] > 0.99
    assert spread(collapsed)["mean_norm"] == pytest.approx(24.0, rel=1e-2)  # 3 · √64
