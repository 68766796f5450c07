"""The cross-validated comparisons: runs pooled over folds and seeds, paired by (fold, seed).

Per arm: the score over all test examples of all its runs (NER: F1 over every fold's entities, from
the runs' summed true/false positives and false negatives; sentiment: macro-F and accuracy over
every snippet, from the summed confusion matrices), and each run's own score. Per comparison A → B,
over the (fold, seed) pairs both arms have run:

* the pooled gain (B's pooled score minus A's) and a 95% bootstrap interval that resamples the pairs
  (``BOOTSTRAP`` draws, seeded), each draw pooling the drawn runs' counts;
* a two-sided sign-flip p over the pairs' differences of run scores (`comparison.sign_flip_test`,
  the one every report uses): exact (every sign pattern) up to ``EXACT_MAX_PAIRS`` pairs, a seeded
  Monte-Carlo estimate from ``SIGN_FLIP_DRAWS`` patterns beyond, its standard error given;
* the relative error reduction, (error A - error B) / error A, error = 100 - pooled score.

    python -m experiments.studies.cv report          # docs/results/cv/results.{md,json}
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy

from experiments.engine.run import CONFUSION, Run, RunRecord, read_record_of, record_path
from experiments.errors import ExperimentError
from experiments.files import read_utf8, write_atomic
from experiments.report.comparison import EXACT_MAX_PAIRS, sign_flip_test

BOOTSTRAP = 10_000
SEED = 0


def _f1(tp: float, fp: float, fn: float) -> float:
    return 100 * 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _macro_f(matrix: numpy.ndarray) -> float:
    tp = numpy.diag(matrix).astype(float)
    denominator = 2 * tp + (matrix.sum(axis=0) - tp) + (matrix.sum(axis=1) - tp)
    return 100 * float(numpy.mean(numpy.where(tp > 0, 2 * tp / numpy.maximum(denominator, 1), 0.0)))


def _accuracy(matrix: numpy.ndarray) -> float:
    total = matrix.sum()
    return 100 * float(numpy.trace(matrix) / total) if total else 0.0


def metrics_of(counts: Dict[str, Any]) -> Dict[str, float]:
    """The scores (0-100) of one run's counts, or of counts summed over runs."""
    if "confusion" in counts:
        matrix = numpy.asarray(counts["confusion"])
        return {"macro_f": _macro_f(matrix), "accuracy": _accuracy(matrix)}
    return {"f1": _f1(counts["tp"], counts["fp"], counts["fn"])}


def sum_counts(records: Sequence[RunRecord]) -> Dict[str, Any]:
    """The runs' counts summed: their true/false positives and false negatives, or their confusion
    matrices, each taken in the first run's order of the classes."""
    first = records[0].counts
    if CONFUSION in first:
        labels = first["labels"]
        return {"labels": labels, CONFUSION: sum(confusion_in(r, labels) for r in records).tolist()}
    return {key: sum(r.counts[key] for r in records) for key in ("tp", "fp", "fn")}


def confusion_in(record: RunRecord, labels: List[str]) -> numpy.ndarray:
    """The confusion matrix of a textcat run's record with its rows and columns in the order of ``labels``."""
    own = record.counts["labels"]
    if own == labels:
        return numpy.asarray(record.counts[CONFUSION])
    if sorted(own) != sorted(labels):
        raise ExperimentError(
            record.run,
            expected=f"a run scored on the classes {', '.join(labels)}",
            found=f"the classes {', '.join(own)}",
            fix="pool only the runs of one task",
        )
    order = [own.index(label) for label in labels]
    return numpy.asarray(record.counts[CONFUSION])[numpy.ix_(order, order)]


def compare(
    a: Sequence[RunRecord], b: Sequence[RunRecord], metric: str, draws: int = BOOTSTRAP, seed: int = SEED
) -> Dict[str, Any]:
    """A → B over paired runs (``a[i]`` and ``b[i]`` share fold and seed)."""
    pooled_a, pooled_b = metrics_of(sum_counts(a))[metric], metrics_of(sum_counts(b))[metric]
    differences = [metrics_of(rb.counts)[metric] - metrics_of(ra.counts)[metric] for ra, rb in zip(a, b)]
    rng = numpy.random.default_rng(seed)
    gains = []
    for _ in range(draws):
        picks = rng.integers(0, len(a), size=len(a))
        gains.append(
            metrics_of(sum_counts([b[i] for i in picks]))[metric]
            - metrics_of(sum_counts([a[i] for i in picks]))[metric]
        )
    low, high = numpy.percentile(gains, [2.5, 97.5])
    test = sign_flip_test(numpy.asarray(differences))
    p, p_error = test["sign_flip_p"], (test["sign_flip_se"] if test["sign_flip_method"] != "exact" else None)
    error_a, error_b = 100 - pooled_a, 100 - pooled_b
    return {
        "metric": metric,
        "pairs": len(a),
        "score_a": pooled_a,
        "score_b": pooled_b,
        "gain": pooled_b - pooled_a,
        "interval": [float(low), float(high)],
        "p": p,
        "p_error": p_error,
        "relative_error_reduction": (error_a - error_b) / error_a if error_a else None,
        "mean_run_gain": float(numpy.mean(differences)),
        "run_gain_std": float(numpy.std(differences, ddof=1)) if len(differences) > 1 else None,
    }


def read_arm(runs: Sequence[Run], records: Path) -> Dict[Tuple[str, str], RunRecord]:
    """{(fold, seed): record} of the planned runs that have a record; a file in a run's place that is not
    a valid record of that run is an `ExperimentError` (the engine's own check, `read_record_of`)."""
    found = {}
    for run in runs:
        record = read_record_of(records, run)
        if record is not None:
            found[run.labels["fold"], run.labels["seed"]] = record
    return found


def check_records(runs: Sequence[Run], records: Path) -> None:
    """``records`` is a folder holding the record of at least one of ``runs``: a mistyped folder would
    otherwise report a study where nothing has run."""
    where = "RECORDS/<task>/<arm>/fold<i>/seed<s>.json"
    fix = "name the folder `python -m experiments.studies.cv run` writes the records to (--records)"
    if not Path(records).is_dir():
        raise ExperimentError(
            records,
            expected="the folder of the study's records",
            found="a file" if Path(records).exists() else "nothing",
            fix=fix,
        )
    if not any(record_path(records, run.id).exists() for run in runs):
        raise ExperimentError(records, expected=f"the records of the planned runs ({where})", found="none", fix=fix)


def build(
    runs: Sequence[Run],
    records: Path,
    comparisons: Sequence[Tuple[str, str, str]],
    arm_records: Optional[Mapping[str, Path]] = None,
) -> Dict[str, Any]:
    """The report: each arm's pooled scores and runs, and each comparison over the pairs both arms have run
    (`check_records` first). An arm named in ``arm_records`` is read from its folder there (another study's
    records of the same runs), the others from ``records``."""
    arm_records = dict(arm_records or {})
    for arm, folder in arm_records.items():
        check_records([run for run in runs if run.labels["arm"] == arm], folder)
    own = [run for run in runs if run.labels["arm"] not in arm_records]
    if own or not arm_records:
        check_records(own, records)
    by_arm: Dict[Tuple[str, str], List[Run]] = {}
    for run in runs:
        by_arm.setdefault((run.labels["task"], run.labels["arm"]), []).append(run)
    arms = {}
    for (task, arm), planned in by_arm.items():
        done = read_arm(planned, arm_records.get(arm, records))
        entry: Dict[str, Any] = {"task": task, "arm": arm, "planned": len(planned), "done": len(done)}
        if done:
            recs = list(done.values())
            entry["pooled"] = metrics_of(sum_counts(recs))
            entry["runs"] = {f"fold{f}/seed{s}": metrics_of(r.counts) for (f, s), r in sorted(done.items())}
            entry["train_minutes"] = sum(r.train_minutes for r in recs if r.train_minutes is not None)
            entry["untimed"] = sum(r.train_minutes is None for r in recs)  # runs trained before they were scored
            entry["cpus"] = sorted({r.cpu for r in recs if r.cpu})
        arms[f"{task}/{arm}"] = entry
    results = []
    for task, a, b in comparisons:
        if (task, a) not in by_arm or (task, b) not in by_arm:
            continue
        done_a = read_arm(by_arm[task, a], arm_records.get(a, records))
        done_b = read_arm(by_arm[task, b], arm_records.get(b, records))
        pairs = sorted(set(done_a) & set(done_b))
        planned = len(by_arm[task, a])
        for metric in ("f1",) if task == "ner" else ("macro_f", "accuracy"):
            entry = {"task": task, "a": a, "b": b, "metric": metric, "planned_pairs": planned, "pairs": len(pairs)}
            if pairs:
                entry.update(compare([done_a[k] for k in pairs], [done_b[k] for k in pairs], metric))
                entry["pair_keys"] = [f"fold{f}/seed{s}" for f, s in pairs]
            if len(pairs) == 1:  # one pair gives a gain, but no interval and no test
                entry.update(interval=None, p=None, p_error=None)
            results.append(entry)
    return {"arms": arms, "comparisons": results}


def markdown(report: Dict[str, Any]) -> str:
    lines = ["# Cross-validated comparisons", ""]
    partial = [c for c in report["comparisons"] if c["pairs"] < c["planned_pairs"]]
    if partial:
        lines += [
            "**Partial**: not every planned (fold, seed) pair has run; the figures below are over the "
            "pairs that have, and will move.",
            "",
        ]
    lines += [
        "| task | A → B | metric | pairs | A | B | gain [95% CI] | rel. error reduction | p |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in report["comparisons"]:
        head = f"| {c['task']} | {c['a']} → {c['b']} | {c['metric']} | {c['pairs']} of {c['planned_pairs']} |"
        if "gain" not in c:
            lines.append(head + " | | | | |")
            continue
        if c["p"] is None:
            p, interval = "one pair: no test", "(one pair: no interval)"
        else:
            if c["p_error"] is None:
                p = f"{c['p']:.3f} (exact)"
            else:  # below 0.001 the estimate says no more than that
                p = _p_text(c["p"]) + (f" ± {c['p_error']:.3f}" if c["p"] >= 0.001 else "") + " (Monte Carlo)"
            interval = f"[{c['interval'][0]:+.2f}, {c['interval'][1]:+.2f}]"
        rer = _reduction_text(c["relative_error_reduction"])
        lines.append(head + f" {c['score_a']:.2f} | {c['score_b']:.2f} | {c['gain']:+.2f} {interval} | {rer} | {p} |")
    lines += [
        "",
        "Pooled over all test examples of the pairs' runs (NER: F1 over all entities; sentiment: "
        "macro-F and accuracy over all snippets); the interval resamples (fold, seed) pairs; p: two-sided "
        "sign-flip test over the pairs' run-level differences.",
        "",
        "## Arms",
        "",
        "| arm | runs | pooled | training minutes |",
        "| --- | --- | --- | --- |",
    ]
    for name, arm in report["arms"].items():
        pooled = ", ".join(f"{k} {v:.2f}" for k, v in arm.get("pooled", {}).items())
        lines.append(f"| {name} | {arm['done']} of {arm['planned']} | {pooled} | {_minutes_text(arm)} |")
    lines += fold_tables(report)
    cpus = sorted({cpu for arm in report["arms"].values() for cpu in arm.get("cpus", [])})
    source = report.get(
        "source",
        "Runs: `python -m experiments.studies.cv run --jobs N` (resumes; records in docs/results/cv/records); "
        "this page: `python -m experiments.studies.cv report`.",
    )
    lines += [
        "",
        f"Trained on {', '.join(cpus) or 'a CPU the records do not name'}, one thread a run, one or two runs "
        f"at a time, on machines shared with other work (the minutes are wall-clock). {source}",
    ]
    return "\n".join(lines) + "\n"


def _minutes_text(arm: Dict[str, Any]) -> str:
    untimed = arm.get("untimed", 0)
    return f"{arm.get('train_minutes', 0):.0f}" + (f" ({untimed} untimed)" if untimed else "")


def fold_tables(report: Dict[str, Any]) -> List[str]:
    """Per comparison, each fold's scores: the mean over its seeds of each run's own score (the pooled
    figures above count every test example once instead), and the fold's gain."""
    lines = ["", "## Folds", ""]
    for c in report["comparisons"]:
        if not c["pairs"]:
            continue
        runs_a = report["arms"][f"{c['task']}/{c['a']}"]["runs"]
        runs_b = report["arms"][f"{c['task']}/{c['b']}"]["runs"]
        by_fold: Dict[str, List[str]] = {}
        for key in c["pair_keys"]:
            by_fold.setdefault(key.split("/")[0], []).append(key)
        lines += [
            f"{c['task']}, {c['a']} → {c['b']}, {c['metric']} (mean of the fold's runs):",
            "",
            "| fold | seeds | " + c["a"] + " | " + c["b"] + " | gain |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        for fold, keys in sorted(by_fold.items(), key=lambda item: int(item[0][len("fold") :])):
            a = float(numpy.mean([runs_a[k][c["metric"]] for k in keys]))
            b = float(numpy.mean([runs_b[k][c["metric"]] for k in keys]))
            lines.append(f"| {fold[len('fold') :]} | {len(keys)} | {a:.2f} | {b:.2f} | {b - a:+.2f} |")
        lines.append("")
    return lines


def write_report(
    runs: Sequence[Run],
    records: Path,
    output: Path,
    comparisons: Sequence[Tuple[str, str, str]],
    readme: Optional[Path] = None,
    day: str = "",
    arm_records: Optional[Mapping[str, Path]] = None,
    source: str = "",
) -> Dict[str, Any]:
    """Pool the records into OUTPUT/results.json and results.md, and with ``readme`` write its results block
    (`update_readme`, made on ``day``); ``arm_records`` as `build` takes it; ``source``, where the page says
    its runs and itself come from (the cv study's commands when empty). The records and the README are
    checked before anything is written."""
    if readme is not None:
        readme_around(readme)
    report = build(runs, records, comparisons, arm_records)
    if source:
        report["source"] = source
    text = markdown(report)
    write_atomic(output / "results.json", json.dumps(report, indent=1) + "\n")
    write_atomic(output / "results.md", text)
    print(text)
    if readme is not None:
        update_readme(readme, report, day)
    return report


# The README's results open with this block, between these two lines; `report --readme README.md`
# writes it again from the report. The block is found by how its first line opens (the rest of that line
# says where the figures come from, and is written as README_START says).
README_OPENING = "<!-- cv results:"
README_START = (
    f"{README_OPENING} the figures of docs/results/cv/results.md (python -m experiments.studies.cv report) -->"
)
README_END = "<!-- cv results end -->"
_TASK_NAMES = {"ner": ("NER", "NER (WNUT-16 tweets)"), "sentiment5": ("sentiment", "5-class sentiment (RT snippets)")}
_METRIC_NAMES = {"f1": "F1", "macro_f": "macro-F", "accuracy": "accuracy"}


def _reduction_text(reduction: Optional[float]) -> str:
    """A relative error reduction in percent; "n/a" against a perfect A (no error to reduce)."""
    return "n/a" if reduction is None else f"{100 * reduction:+.1f}%"


def _p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def readme_block(report: Dict[str, Any], day: str) -> str:
    """The README's summary of `report` (made on `day`): a row for each comparison whose pairs have all run,
    a verdict in words that follows the figures (significant: p < 0.05 and an interval clear of 0), and
    how far the others have got."""
    import textwrap

    done = [c for c in report["comparisons"] if c["pairs"] == c["planned_pairs"] and c["pairs"] > 1]
    pending = [c for c in report["comparisons"] if c not in done]
    cpus = sorted({cpu for arm in report["arms"].values() for cpu in arm.get("cpus", [])})
    intro = textwrap.fill(
        f"**Cross-validated over every labelled example ({day}):** all 2,394 WNUT-16 tweets and 10,605 RT "
        "snippets, 10 folds × 2 seeds, 3,000 steps a run, paired by (fold, seed); pooled scores, a bootstrap 95% "
        f"interval over pairs, a sign-flip p (MC: Monte Carlo, beyond {EXACT_MAX_PAIRS} pairs) and the per-run gain's "
        "mean ± std "
        "([record, commands, folds](docs/results/cv/results.md): `python -m experiments.studies.cv run`, then "
        f"`report --readme README.md`; one thread a run, 2-core {', '.join(f'`{c}`' for c in cpus) or 'CPUs'}):",
        width=99,
        break_on_hyphens=False,
        break_long_words=False,
    )
    rows, words = [], []
    for c in done:
        short, long = _TASK_NAMES.get(c["task"], (c["task"], c["task"]))
        metric = _METRIC_NAMES.get(c["metric"], c["metric"])
        low, high = c["interval"]
        p = _p_text(c["p"]) + (" (MC)" if c["p_error"] is not None else "")
        rows.append(
            f"| {long}, {metric} | {c['a']} → {c['b']} | {c['score_a']:.2f} → {c['score_b']:.2f} | "
            f"{c['gain']:+.2f} [{low:+.2f}, {high:+.2f}] | {c['mean_run_gain']:+.2f} ± {c['run_gain_std']:.2f} | "
            f"{_reduction_text(c['relative_error_reduction'])} | {p} |"
        )
        significant = c["p"] < 0.05 and (low > 0 or high < 0)
        words.append(
            f"{short} {metric}, {c['a']} → {c['b']}: {c['gain']:+.2f} ("
            + (
                f"significant: interval clear of 0, p {_p_text(c['p'])}"
                if significant
                else f"not significant at 0.05: p {c['p']:.2f}"
            )
            + ")"
        )
    waiting = sorted(
        {f"{c['task']} {c['a']} → {c['b']}: {c['pairs']} of {c['planned_pairs']} pairs so far" for c in pending}
    )
    summary = (
        f"Verdict, {len(done[0]['pair_keys']) if done else 0} pairs each: " + "; ".join(words) + "."
        if done
        else "No comparison has all its pairs yet."
    )
    if waiting:
        summary += (
            " Not reported here until complete ([partial figures](docs/results/cv/results.md)): "
            + "; ".join(waiting)
            + "."
        )
    return "\n".join(
        [
            README_START,
            intro,
            "",
            "| task | arms | pooled | gain [95% CI] | per-run gain | rel. error reduction | sign-flip p |",
            "| --- | --- | --- | --- | --- | ---: | ---: |",
            *rows,
            "",
            textwrap.fill(summary, width=99, break_on_hyphens=False, break_long_words=False),
            README_END,
        ]
    )


def readme_around(path: Path) -> Tuple[str, str]:
    """The text of the README ``path`` before and after its results block (the line opening with
    README_OPENING to README_END)."""
    text = read_utf8(path, "a README with the cv results block")
    start, end = text.find(README_OPENING), text.find(README_END)
    if start < 0 or end < start:
        raise ExperimentError(
            path,
            expected=f"a block from {README_START!r} to {README_END!r}",
            found="none",
            fix="put the two lines where the summary belongs",
        )
    return text[:start], text[end + len(README_END) :]


def update_readme(path: Path, report: Dict[str, Any], day: str) -> None:
    """Write `readme_block` over the block between README_START and README_END in `path`."""
    before, after = readme_around(path)
    write_atomic(path, before + readme_block(report, day) + after)
