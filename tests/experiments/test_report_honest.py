"""The demo's report says what one seed can and cannot show (``experiments.report.comparison``), and its
charts are read as drawn: score axes from 0, error bars only over seeds, the layer-weight legend beside the
bars, one name per layer in every table and chart (``spacy_elmo.layer_mixes``, ``experiments.report.layer_weights``)."""

import json
from pathlib import Path

import pytest

from experiments.report import comparison, layer_weights
from spacy_elmo import layer_mixes
from spacy_elmo.layer_mixes import mean_over_runs


def write_seeds(metrics: Path, runs: dict) -> None:
    """METRICS/<run>/seedN.json of each run's scores (fractions, as spaCy writes them)."""
    for run, scores in runs.items():
        (metrics / run).mkdir(parents=True)
        for seed, score in enumerate(scores):
            (metrics / run / f"seed{seed}.json").write_text(json.dumps({"ents_f": score}))


def report(tmp_path: Path, runs: dict) -> str:
    """results.md as the workflow's report step writes it for these runs."""
    write_seeds(tmp_path / "metrics", runs)
    (tmp_path / "training").mkdir()
    comparison.main(tmp_path / "metrics", tmp_path / "training", tmp_path / "report", None, "Demo")
    return (tmp_path / "report" / "results.md").read_text(encoding="utf8")


def table_lines(text: str) -> list:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_a_one_seed_report_shows_scores_alone_and_says_it_is_not_a_result(tmp_path):
    text = report(tmp_path, {"ner_baseline": [0.2203], "ner_elmo": [0.4226]})
    header, _, row = table_lines(text)
    assert "±" not in text and "95% CI" not in header and "sign-flip p" not in header
    assert "| 22.03 | + ELMo | 42.26 | +20.23 | +25.9% | 1 |" in row
    assert comparison.ONE_SEED_CAVEAT in text and comparison.CV_STUDY in comparison.ONE_SEED_CAVEAT
    assert (tmp_path / "report" / "scores.png").stat().st_size > 0


def test_a_report_over_seeds_keeps_mean_std_and_the_paired_interval(tmp_path):
    text = report(tmp_path, {"ner_baseline": [0.20, 0.22, 0.24], "ner_elmo": [0.41, 0.42, 0.46]})
    header, _, row = table_lines(text)
    assert "absolute gain [95% CI]" in header and "sign-flip p" in header
    assert "| 22.00 ± 2.00 | + ELMo | 43.00 ± 2.65 | +21.00 [+" in row
    assert row.count("±") == 2 and comparison.ONE_SEED_CAVEAT not in text


def runs_of(*seeds_by_run):
    """A task's runs as `collect_scores` gives them, from each run's scores in percent."""
    return {
        variant: {**comparison.mean_std(seeds), "seeds": seeds, "by_seed": {f"seed{k}": s for k, s in enumerate(seeds)}}
        for variant, seeds in zip(("baseline", "elmo"), seeds_by_run)
    }


def drawn(fig):
    """The figure drawn on an Agg canvas (whatever the backend), and its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def error_bars(ax) -> int:
    from matplotlib.container import ErrorbarContainer

    return sum(isinstance(c, ErrorbarContainer) for c in ax.containers)


def test_score_axes_start_at_0_and_one_seed_has_no_error_bar_but_a_caveat(tmp_path):
    fig = comparison.scores_figure({"ner": runs_of([82.0], [88.0]), "sentiment5": runs_of([91.0], [93.0])})
    renderer = drawn(fig)
    for ax, best in zip(fig.axes, (88.0, 93.0)):
        low, high = ax.get_ylim()
        assert low == 0.0 and best < high <= 100.0
        assert error_bars(ax) == 0
    assert " ".join(fig.get_suptitle().split()) == comparison.ONE_SEED_PLOT_CAVEAT  # wrapped, word for word
    caveat = fig._suptitle  # its Text, for where it was drawn
    assert fig.bbox.contains(*caveat.get_window_extent(renderer).p0)
    assert fig.bbox.contains(*caveat.get_window_extent(renderer).p1)  # wrapped to fit, not cut off


def test_score_axes_over_seeds_have_an_error_bar_per_run_and_no_caveat():
    fig = comparison.scores_figure({"ner": runs_of([80.0, 84.0], [86.0, 90.0])})
    (ax,) = fig.axes
    assert ax.get_ylim()[0] == 0.0 and error_bars(ax) == 2
    assert fig.get_suptitle() == ""


MIXES = {"ner": [[0.34, 0.33, 0.33]], "sentiment5": [[0.33, 0.34, 0.33]], "pos": [[0.33, 0.33, 0.34]]}


def test_the_layer_weight_legend_stands_beside_the_bars_inside_the_figure():
    fig = layer_mixes.mixes_figure(mean_over_runs(MIXES), title="Layer weights")  # bars as tall as the axes everywhere
    renderer = drawn(fig)
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent(renderer)
    bars = [patch.get_window_extent(renderer) for patch in ax.patches]
    assert len(bars) == 9 and not any(legend.overlaps(bar) for bar in bars)
    assert legend.x0 >= ax.get_window_extent(renderer).x1
    assert fig.bbox.contains(legend.x1 - 1, legend.y0) and fig.bbox.contains(legend.x1 - 1, legend.y1 - 1)


@pytest.mark.parametrize(
    "runs, label, error_bar", [(1, "softmax(s)", False), (2, "softmax(s), mean ± std over runs", True)]
)
def test_the_layer_weight_axis_says_mean_and_std_only_over_runs(runs, label, error_bar):
    summary = mean_over_runs({"ner": [[0.2, 0.3, 0.5], [0.3, 0.3, 0.4]][:runs]})
    assert ("std" in summary["ner"]) is error_bar and summary["ner"]["runs"] == runs
    (ax,) = layer_mixes.mixes_figure(summary).axes
    assert ax.get_ylabel() == label and (error_bars(ax) == 1) is error_bar
    assert (
        [tick.get_text() for tick in ax.get_xticklabels()]
        == layer_mixes.layer_names(3)
        == ["tokens", "LSTM 1", "LSTM 2"]
    )


def weights_of(*seeds):
    found = {"ner_elmo": [{"weights": w, "gamma": 1.0} for w in seeds]}
    return found, mean_over_runs({label: [mix["weights"] for mix in mixes] for label, mixes in found.items()})


def test_the_layer_weight_table_names_the_layers_as_the_chart_does():
    found, summary = weights_of([0.2, 0.3, 0.5])
    header, _, row = table_lines(layer_weights.weights_table(found, summary))
    assert [cell.strip() for cell in header.strip("|").split("|")][1:4] == layer_mixes.layer_names(3)
    assert "±" not in row and "| 0.200 | 0.300 | 0.500 | 1.000 | 1 |" in row
    assert layer_weights.chart_title(summary) == "Learned layer weights, one seed"
    found, summary = weights_of([0.2, 0.3, 0.5], [0.4, 0.3, 0.3])
    (row,) = table_lines(layer_weights.weights_table(found, summary))[2:]
    assert "| 0.300 ± 0.100 | 0.300 ± 0.000 | 0.400 ± 0.100 |" in row
    assert layer_weights.chart_title(summary) == "Learned layer weights, mean ± std over seeds"
