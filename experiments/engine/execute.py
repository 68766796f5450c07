"""Train one run, score it on its test split and write its record (a job of ``experiments.engine.plan``).

    python -m experiments.engine.execute RECORDS WORK --run '{"id": ..., "config": ..., ...}' [--keep-model]

The run trains in ``WORK/<id's folder>/.<id's name>.partial`` (``scratch``: hidden, so that a
reader of ``seed*/model-best`` never finds a half-trained run; spaCy's progress table in this process's
output, the dev curve also in the folder's ``train_log.jsonl``), its model-best is scored on the test
split, and the record goes to ``RECORDS/<id>.json`` (atomically). Then the folder is removed; with
``--keep-model`` it is swapped into ``WORK/<id>`` first and scored there, so a record is never written
before the model it describes is in place: the run's earlier record is removed before the swap, and
the model takes its training fingerprint along (``WORK/<id>/fingerprint.json``, the training part of the
fingerprint taken before training). The fingerprint is taken before training and again after scoring:
an input that changed meanwhile leaves no record (the run is trained again). With ``--keep-model`` the
new model then stays in ``WORK/<id>`` without a record, so the next run scores it when its
fingerprint.json is still current and trains it again when not; it never finds the earlier model's record
beside it.

Training runs in this process (the command's on one torch thread: a plan runs many; `execute`
called from another program keeps its threads), so that pausing the study's processes
(``pkill -STOP -f 'experiments\\.'``) pauses the training too.
"""

import datetime
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import typer

from experiments.engine.run import (
    AGREE,
    TEST,
    Run,
    RunRecord,
    accuracy,
    changed,
    digest,
    f1,
    fingerprint,
    macro_f,
    record_path,
    training_part,
    write_record,
)
from experiments.errors import ExperimentError, run_app
from experiments.files import write_atomic

TRAIN_LOG = "train_log.jsonl"
# Beside a kept model-best (WORK/<id>/): the training fingerprint it was trained from (`training_part`).
TRAINING_FINGERPRINT = "fingerprint.json"
CONSOLE_LOGGERS = ("spacy.ConsoleLogger.v1", "spacy.ConsoleLogger.v2", "spacy.ConsoleLogger.v3")


def dev_log_overrides(config: Path, overrides: Dict[str, Any], run_dir: Path) -> Dict[str, Any]:
    """Overrides that make spaCy's console logger also write the dev curve to ``run_dir``; its table
    stays on screen, with a bar of the steps to the next evaluation on a terminal (spaCy leaves it out
    of a log file). A config whose logger is not spaCy's console logger keeps its own logger."""
    from spacy.util import load_config

    logger = load_config(config, overrides=overrides, interpolate=False)["training"]["logger"]
    if logger.get("@loggers") not in CONSOLE_LOGGERS:
        return {}
    return {
        "training.logger.@loggers": "spacy.ConsoleLogger.v3",
        "training.logger.progress_bar": "eval",
        "training.logger.output_file": str(run_dir / TRAIN_LOG),
    }


def read_dev_curve(run_dir: Path) -> List[Dict[str, float]]:
    """[{"step", "score"}] of each evaluation in the run's ``train_log.jsonl`` (empty when there is none)."""
    path = run_dir / TRAIN_LOG
    if not path.exists():
        return []
    curve = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            curve.append({"step": float(entry["step"]), "score": float(entry["score"])})
    return curve


def ner_counts(examples) -> Dict[str, int]:
    """True positives, false positives and false negatives over all entities, counted by spaCy's
    rules (``spacy.scorer.get_ner_prf``): a predicted entity is mapped onto the reference's tokens and
    matches a gold entity of the same label and span once; one over reference tokens without entity
    annotation counts neither way; a reference without entity annotation is left out."""
    tp = fp = fn = 0
    for eg in examples:
        if not eg.reference.has_annotation("ENT_IOB"):
            continue
        gold = {(e.label_, e.start, e.end) for e in eg.reference.ents}
        x2y = eg.alignment.x2y
        for ent in eg.predicted.ents:
            indices = x2y[ent.start : ent.end]
            if not len(indices):
                continue
            if any(token.ent_iob == 0 for token in eg.reference[indices[0] : indices[-1] + 1]):
                continue
            key = (ent.label_, int(indices[0]), int(indices[-1]) + 1)
            if key in gold:
                tp += 1
                gold.remove(key)
            else:
                fp += 1
        fn += len(gold)
    return {"tp": tp, "fp": fp, "fn": fn}


def tag_counts(examples) -> Dict[str, int]:
    """Tokens tagged right (tp), tagged wrong (fp, and fn for the gold tag missed), untagged (fn), counted
    by spaCy's rules (``Scorer.score_token_attr``: a predicted token counts where it aligns to exactly one
    reference token that has a tag; whitespace tokens are left out); tag_acc is F1 of these counts."""
    tp = fp = fn = 0
    for eg in examples:
        gold = {(i, t.tag_) for i, t in enumerate(eg.reference) if t.tag_}
        missing = {i for i, t in enumerate(eg.reference) if not t.tag_}
        lengths = eg.alignment.x2y.lengths
        pred = set()
        for token in eg.predicted:
            if token.orth_.isspace() or lengths[token.i] != 1:
                continue
            i = int(eg.alignment.x2y[token.i][0])
            if i not in missing:
                pred.add((i, token.tag_))
        tp += len(gold & pred)
        fp += len(pred - gold)
        fn += len(gold - pred)
    return {"tp": tp, "fp": fp, "fn": fn}


def confusion(examples, labels: List[str]) -> List[List[int]]:
    """Gold class (rows) by predicted class (columns): each doc's highest-scoring category."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for eg in examples:
        gold = max(eg.reference.cats, key=eg.reference.cats.get)
        pred = max(eg.predicted.cats, key=eg.predicted.cats.get)
        matrix[index[gold]][index[pred]] += 1
    return matrix


def evaluate(nlp, test: Path) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """spaCy's scores of the pipeline ``nlp`` on ``test`` and the counts they come from (checked to agree)."""
    from spacy.scorer import Scorer
    from spacy.training import Corpus

    examples = list(Corpus(str(test))(nlp))
    for eg, doc in zip(examples, nlp.pipe(eg.predicted for eg in examples)):
        eg.predicted = doc
    # spaCy's scores of the predictions kept here (nlp.evaluate would predict on copies)
    scores = json.loads(json.dumps(Scorer(nlp=nlp).score(examples), default=float))
    textcats = [name for name in nlp.pipe_names if name.startswith("textcat")]
    if textcats:
        labels = list(nlp.get_pipe(textcats[0]).labels)
        matrix = confusion(examples, labels)
        scores["cats_accuracy"] = accuracy(matrix)
        ours, theirs = macro_f(matrix), scores.get("cats_macro_f")
        counts: Dict[str, Any] = {"labels": labels, "confusion": matrix}
    elif "ner" in nlp.pipe_names:
        counts = ner_counts(examples)
        ours, theirs = f1(**counts), scores.get("ents_f")
    elif "tagger" in nlp.pipe_names:
        counts = tag_counts(examples)
        ours, theirs = f1(**counts), scores.get("tag_acc")
    else:
        raise ExperimentError(
            test,
            expected="a pipeline with a textcat, an ner or a tagger to score on it",
            found=f"the components {', '.join(nlp.pipe_names)}",
            fix="score other pipelines with `spacy evaluate`",
        )
    if theirs is None or abs(ours - theirs) > AGREE:
        raise ExperimentError(
            test,
            expected="the counts kept for the record to give spaCy's score",
            found=f"{ours!r} from the counts, {theirs!r} from spaCy",
            fix="report this: the record's counts would not give its scores",
        )
    return scores, counts


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; the platform's processor string elsewhere)."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def count_docs(path: Path) -> int:
    from spacy.tokens import DocBin

    return len(DocBin().from_disk(path))


def sizes(run: Run) -> Dict[str, int]:
    """The number of docs of the run's training split (``paths.train``, when it is a .spacy file) and test split."""
    result = {"test": count_docs(Path(run.test))}
    train = run.settings.get("paths.train")
    if isinstance(train, str) and train.endswith(".spacy") and Path(train).is_file():
        result["train"] = count_docs(Path(train))
    return result


def train_into(config: Path, settings: Dict[str, Any], partial: Path, gpu_id: int = -1) -> float:
    """Train ``config`` with ``settings`` in a fresh folder ``partial``, its dev curve kept there
    (``dev_log_overrides``); returns the minutes it took."""
    from spacy.cli.train import train

    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    started = time.time()
    train(config, partial, use_gpu=gpu_id, overrides={**settings, **dev_log_overrides(config, settings, partial)})
    return (time.time() - started) / 60


def scratch(work: Path, run_id: str, what: str) -> Path:
    """``WORK/<id's folder>/.<id's name>.<what>``: where run ``run_id`` trains (``partial``) or its earlier
    model waits to be removed (``stale``), beside its final place and hidden from a glob of ``seed*``."""
    final = Path(work) / run_id
    return final.parent / f".{final.name}.{what}"


def swap_into_place(partial: Path, final: Path, stale: Path) -> None:
    """Move a finished training from ``partial`` to ``final``; a folder already there goes to ``stale``
    first and is removed last, so ``final`` is never half written."""
    shutil.rmtree(stale, ignore_errors=True)
    if final.exists():
        final.rename(stale)
    partial.rename(final)
    shutil.rmtree(stale, ignore_errors=True)


def keep_in_place(run_id: str, records: Path, work: Path, training: Dict[str, str]) -> None:
    """Move run ``run_id``'s finished training (``scratch(work, run_id, "partial")``) to WORK/<id>, its
    training fingerprint ``training`` kept with it (``TRAINING_FINGERPRINT``). The run's record is removed
    first: it describes the model scored before, and the new one has none until it is scored."""
    partial = scratch(work, run_id, "partial")
    write_atomic(partial / TRAINING_FINGERPRINT, json.dumps(training, indent=1, sort_keys=True) + "\n")
    record_path(records, run_id).unlink(missing_ok=True)
    swap_into_place(partial, Path(work) / run_id, scratch(work, run_id, "stale"))


def score(
    run: Run, model: Path, records: Path, before: Dict[str, str], run_dir: Path, train_minutes: Optional[float] = None
) -> Path:
    """Score ``model`` (the pipeline ``run`` trained) on the run's test split and write its record, when the
    run's fingerprint is still ``before``; ``run_dir`` holds the training's dev curve. Returns the record's path."""
    import spacy

    from spacy_elmo.layer_mixes import listener_mixes

    print(f"{run.id}: scoring {model} on {run.test}", flush=True)
    nlp = spacy.load(model)
    scores, counts = evaluate(nlp, Path(run.test))
    after = fingerprint(run)
    moved = changed(before, after)
    if moved:
        raise ExperimentError(
            run.id,
            expected="the run's inputs unchanged while it trained and was scored",
            found=f"{', '.join(moved)} changed",
            fix="run the study again once they are settled",
        )
    record = RunRecord(
        run=run.id,
        config=run.config,
        overrides=dict(run.overrides),
        seed=run.seed,
        test=run.test,
        labels=dict(run.labels),
        fingerprint=after,
        evaluated={"model": digest(model), "test": after[TEST]},
        scores=scores,
        counts=counts,
        dev_curve=read_dev_curve(run_dir),
        mixes=listener_mixes(nlp),
        sizes=sizes(run),
        train_minutes=train_minutes,
        cpu=cpu_model(),
        finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    return write_record(records, record)


def execute(run: Run, records: Path, work: Path, keep_model: bool = False, gpu_id: int = -1) -> Path:
    """Train, score and record ``run``; returns the record's path."""
    # torch's threads left as they are: a job runs on one (jobs.ONE_THREAD, main()),
    # a program calling this keeps its own
    before = fingerprint(run)
    partial = scratch(work, run.id, "partial")
    print(f"{run.id}: training {run.config} (seed {run.seed}) in {partial}", flush=True)
    minutes = train_into(Path(run.config), run.settings, partial, gpu_id)
    print(f"{run.id}: trained in {minutes:.1f} min", flush=True)
    if keep_model:  # in its place before its record: a record never vouches for a model not yet there
        keep_in_place(run.id, records, work, training_part(before))
        path = score(run, work / run.id / "model-best", records, before, work / run.id, round(minutes, 2))
    else:
        path = score(run, partial / "model-best", records, before, partial, round(minutes, 2))
        shutil.rmtree(partial, ignore_errors=True)
    print(f"{run.id}: {path}", flush=True)
    return path


def main(
    records: Path = typer.Argument(..., help="Folder of the study's records"),
    work: Path = typer.Argument(..., help="Scratch folder of the trainings"),
    run: str = typer.Option(..., "--run", help="The run, as Run.to_json writes it"),
    keep_model: bool = typer.Option(False, "--keep-model", help="Keep the trained pipeline in WORK/<id>"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU id to train on, or -1 for the CPU"),
) -> None:
    import torch

    the_run = Run.from_json(run)  # checked before anything is set
    torch.set_num_threads(1)  # a job of a plan: one of many processes, one thread each
    execute(the_run, records, work, keep_model, gpu_id)


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command()(main)
    run_app(app, sys.argv[1:])
