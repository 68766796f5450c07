"""One run of a study, what it depends on, and the record that says it is done.

A `Run` is a spaCy config trained once with some overrides and a seed, then scored on a test split.
Its identity (``Run.id``, e.g. ``cv/ner/elmo/fold3/seed1``) names its record: two runs of a plan
never share one, whatever their folders are called.

Its fingerprint is everything the trained model and its scores depend on:

* ``config``: the config as spaCy would train it (the file, every override and the seed applied,
  the variables interpolated), so a changed setting or default counts;
* ``reads <key>``: the content of every file or folder the resolved config names, wherever it
  names it: ``[paths]``, but also ``initialize.components.elmo.options_file``, vectors, a corpus
  path written straight into a reader's block; a biLM exported again in place changes the run;
  a shipped biLM's name (``elmo-en-small``) counts as its folder in the package;
* ``test``: the test split it is scored on; ``input <path>``: any other file the plan says the
  run depends on (a study's fold assignment);
* ``versions``: spaCy's and spacy-elmo's.

A run is done when its record (``RECORDS/<id>.json``) exists, is a valid record, and holds the
fingerprint of what would be trained now (``is_done``); the model itself need not be kept. A
record is written atomically once the run has been trained and scored (``experiments.engine.execute``,
for the demo's seeds through ``experiments.demo.train_seeds --test``; for a model trained earlier without
a test split, by ``experiments.demo.evaluate_seeds`` through the same ``execute.score``).

A study names a run's overrides as ``spacy train`` reads them from its command line (``overrides_from_args``:
``["--training.max_steps", "1000"]`` is ``{"training.max_steps": 1000}``).
"""

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import spacy
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from weasel.util import parse_config_overrides

import spacy_elmo
from experiments.errors import ExperimentError
from experiments.files import write_atomic
from spacy_elmo.shipped_models import is_shipped, shipped_model

RECORD_SUFFIX = ".json"


@dataclass(frozen=True)
class Run:
    """One training run: ``config`` with ``overrides`` and ``seed``, scored on ``test``.

    id: the run's identity in its plan, a relative path such as ``cv/ner/elmo/fold3/seed1``.
    overrides: ``spacy train`` settings (``section.key``: value), the seed left out.
    inputs: other files the run depends on (their content is part of the fingerprint).
    """

    id: str
    config: str
    overrides: Tuple[Tuple[str, Any], ...]
    seed: int
    test: str
    inputs: Tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        check_run_id(self.id)

    @property
    def settings(self) -> Dict[str, Any]:
        """The overrides ``spacy train`` gets, the seed included."""
        return {**dict(self.overrides), "system.seed": self.seed}

    def to_json(self) -> str:
        return json.dumps(
            {
                "id": self.id,
                "config": self.config,
                "overrides": [list(o) for o in self.overrides],
                "seed": self.seed,
                "test": self.test,
                "inputs": list(self.inputs),
                "labels": dict(self.labels),
            }
        )

    @classmethod
    def from_json(cls, text: str, where: str = "--run") -> "Run":
        """The run `to_json` wrote; `ExperimentError` naming ``where`` for text that is not one."""
        try:
            data = _RunJson.model_validate_json(text)
        except ValidationError as err:
            fields = ", ".join(_RunJson.model_fields)
            raise ExperimentError(
                where,
                expected=f"a run as Run.to_json writes it ({fields})",
                found=first_error(err),
                fix="pass the JSON text a plan gives its jobs",
            ) from None
        return cls(
            id=data.id,
            config=data.config,
            overrides=tuple(data.overrides),
            seed=data.seed,
            test=data.test,
            inputs=tuple(data.inputs),
            labels=data.labels,
        )


class _RunJson(BaseModel):
    """The JSON form of a `Run` (`Run.to_json`)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    config: str
    overrides: List[Tuple[str, Any]]
    seed: int
    test: str
    inputs: List[str]
    labels: Dict[str, str] = {}


def overrides_from_args(args: Sequence[str]) -> Dict[str, Any]:
    """The ``--section.key value`` settings of a command line (and of $SPACY_CONFIG_OVERRIDES), as spaCy
    reads them."""
    from spacy_elmo.training.run.config import CONFIG_OVERRIDES_ENV  # (imports torch: only where it is asked)

    return parse_config_overrides(list(args), env_var=CONFIG_OVERRIDES_ENV)


def check_run_id(run_id: str) -> str:
    """``run_id`` when it is a relative path of plain names (``cv/ner/elmo/fold0/seed0``): a run's record and
    views are named by it, so an empty part, ``.``, ``..`` or a leading ``/`` would put them elsewhere."""
    if any(part in ("", ".", "..") for part in run_id.replace("\\", "/").split("/")):
        raise ExperimentError(
            "a run id",
            expected="a relative path such as cv/ner/elmo/fold0/seed0",
            found=repr(run_id),
            fix="name each run by a path of plain parts",
        )
    return run_id


def first_error(err: ValidationError) -> str:
    """Where the first problem a pydantic `ValidationError` found is, and what it is."""
    first = err.errors()[0]
    return f"{'.'.join(map(str, first['loc'])) or 'the top level'}: {first['msg']}"


# Digests, cached by (path, size, mtime) within a process: a plan asks for the same biLM many times.
_DIGESTS: Dict[Tuple[str, int, int], str] = {}


def _file_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def is_documentation(file: Path) -> bool:
    """A folder's README or Markdown page (a biLM's model card): read by people, never by a run."""
    return file.name.upper().startswith("README") or file.suffix.lower() == ".md"


def digest(path: Path) -> str:
    """The sha256 of a file's bytes, or of a folder's files (their relative names and digests, sorted),
    its documentation left out (`is_documentation`: a model card edited does not retrain a study)."""
    path = Path(path)
    if not path.is_dir():
        return _file_sha256(path)
    total = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and not is_documentation(p)):
        total.update(f"{file.relative_to(path).as_posix()}\0{_file_sha256(file)}\n".encode())
    return total.hexdigest()


def _strings(tree: Any, prefix: str = "") -> Iterator[Tuple[str, str]]:
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from _strings(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from _strings(value, f"{prefix}[{i}]")
    elif isinstance(tree, str):
        yield prefix, tree


# Settings that name what they read by their key (spaCy's and ours): `options_file`,
# `weights_file`, a component's `source`, `[initialize] vectors`, `init_tok2vec`, ...
_FILE_KEYS = ("file", "path", "dir", "source", "vectors", "init_tok2vec")


def read_paths(config: Mapping[str, Any]) -> Dict[str, Path]:
    """{dotted key: path} for every value of a resolved config that names an existing file or
    folder: every value under ``[paths]``, any other that holds a path separator, and any whose
    key names a file (`_FILE_KEYS`: ``options_file = bilm`` is a folder in the working directory);
    and for a shipped biLM's name, its folder (a published model's name is enough: its files are
    checked against their first download's SHA-256 at every load)."""
    found = {}
    for key, value in _strings(config):
        if not value or "\n" in value:
            continue
        if is_shipped(value):
            found[key] = shipped_model(value)
            continue
        names_a_file = key.rsplit(".", 1)[-1].endswith(_FILE_KEYS)
        if (key.startswith("paths.") or "/" in value or os.sep in value or names_a_file) and Path(value).exists():
            found[key] = Path(value)
    return found


def config_fingerprint(config_path: str, settings: Mapping[str, Any], where: str = "") -> Dict[str, str]:
    """The digests of what training ``config_path`` with ``settings`` depends on: the resolved config,
    the versions, and every file or folder the resolved config reads (``reads <key>``)."""
    from spacy.util import load_config

    try:
        config = load_config(config_path, overrides=dict(settings), interpolate=True)
    except (OSError, ValueError) as err:  # confection's ConfigValidationError is a ValueError
        raise ExperimentError(
            config_path,
            expected="a spaCy config that takes the run's overrides",
            found=f"{type(err).__name__}: {err}".splitlines()[0],
            fix=f"check the config and the overrides{' of run ' + where if where else ''}",
        ) from None
    result = {
        "config": hashlib.sha256(config.to_str().encode("utf-8")).hexdigest(),
        "versions": f"spacy {spacy.__version__}, spacy-elmo {spacy_elmo.__version__}",
    }
    for key, path in sorted(read_paths(config).items()):
        result[f"reads {key}"] = digest(path)
    return result


TEST = "test"  # the key of the test split's digest in a run's fingerprint
INPUT = "input "  # the prefix of the key of each other input's digest


def fingerprint(run: Run) -> Dict[str, str]:
    """The digests of everything ``run`` depends on (see the module's docstring)."""
    training = config_fingerprint(run.config, run.settings, run.id)
    test = Path(run.test)
    if not test.exists():
        raise ExperimentError(
            test, expected=f"the test split of run {run.id}", found="nothing", fix="convert or cut the data first"
        )
    result = {**training, TEST: digest(test)}
    for path in run.inputs:
        if not Path(path).exists():
            raise ExperimentError(
                path, expected=f"an input of run {run.id}", found="nothing", fix="prepare the study's inputs first"
            )
        result[f"{INPUT}{path}"] = digest(Path(path))
    return result


def training_part(run_fingerprint: Mapping[str, str]) -> Dict[str, str]:
    """The part of a run's fingerprint that its training depends on (what ``config_fingerprint`` gives):
    the test split and the plan's other inputs left out."""
    return {key: value for key, value in run_fingerprint.items() if key != TEST and not key.startswith(INPUT)}


def changed(stored: Optional[Mapping[str, str]], current: Mapping[str, str]) -> List[str]:
    """The parts of ``current`` that ``stored`` does not match (all of them when nothing is stored)."""
    if stored is None:
        return ["no fingerprint stored with the run"]
    return [key for key in sorted(set(stored) | set(current)) if stored.get(key) != current.get(key)]


# Scores spaCy gives and the counts they are computed from must agree to this much (floats kept by JSON).
AGREE = 1e-9


def f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def macro_f(matrix: List[List[int]]) -> float:
    """The mean over classes of each class's F1 (one-vs-rest), from a confusion matrix."""
    n = len(matrix)
    scores = []
    for k in range(n):
        tp = matrix[k][k]
        fp = sum(matrix[g][k] for g in range(n)) - tp
        fn = sum(matrix[k]) - tp
        scores.append(f1(tp, fp, fn))
    return sum(scores) / n


def accuracy(matrix: List[List[int]]) -> float:
    total = sum(map(sum, matrix))
    return sum(matrix[k][k] for k in range(len(matrix))) / total if total else 0.0


class RunRecord(BaseModel):
    """What a finished run leaves: its scores and what they were computed from."""

    run: str
    config: str
    overrides: Dict[str, Any]
    seed: int
    test: str
    labels: Dict[str, str] = {}
    fingerprint: Dict[str, str]
    evaluated: Dict[str, str]  # {"model": digest of the model scored, "test": digest of the test split}
    scores: Dict[str, Any]
    counts: Dict[
        str, Any
    ]  # NER, tagger: {"tp", "fp", "fn"}; textcat: {"labels", "confusion" (gold rows, predicted columns)}
    dev_curve: List[Dict[str, float]] = []
    mixes: Dict[str, Any] = {}  # each ELMo listener's learned layer mix (spacy_elmo.layer_mixes.listener_mixes)
    sizes: Dict[str, int] = {}  # docs in the training and test splits
    # None: a model trained before it was scored (experiments.demo.evaluate_seeds)
    train_minutes: Optional[float] = Field(None, ge=0, allow_inf_nan=False)
    cpu: str = ""  # the CPU model that trained it (train_minutes are its minutes, on a machine maybe shared)
    finished: str

    @field_validator("counts")
    @classmethod
    def _counts_are_counts(cls, counts: Dict[str, Any]) -> Dict[str, Any]:
        values = _cells(counts) if CONFUSION in counts else [counts.get(key) for key in PRF_COUNTS]
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in values):
            raise ValueError("counts are whole numbers of 0 or more")
        return counts

    @model_validator(mode="after")
    def _scores_follow_from_counts(self) -> "RunRecord":
        """The record's scores are the ones its counts give (as `execute.evaluate` checked when it was
        written), finite numbers: a score edited by hand would be served by the views and `paired`, while
        `cv` computes it again from the counts."""
        for key, ours in scores_of_counts(self.counts, self.scores).items():
            theirs = self.scores.get(key, ours)  # (a record may keep its counts alone)
            if not _is_finite_number(theirs) or abs(ours - theirs) > AGREE:
                raise ValueError(f"scores.{key} is {theirs!r}, but the counts give {ours!r}")
        return self


CONFUSION = "confusion"  # a textcat record's counts: {"labels": [...], "confusion": gold rows by predicted columns}
PRF_COUNTS = ("tp", "fp", "fn")  # an NER or tagger record's counts


def _cells(counts: Mapping[str, Any]) -> List[Any]:
    """The cells of a textcat record's confusion matrix, once it is square with one row and column per label
    (at least one label, each a name given once)."""
    labels, rows = counts.get("labels"), counts[CONFUSION]
    if (
        not isinstance(labels, list)
        or not labels
        or not all(isinstance(label, str) for label in labels)
        or len(set(labels)) != len(labels)
    ):
        raise ValueError("labels are the classes' names, each once, at least one")
    if (
        not isinstance(rows, list)
        or len(rows) != len(labels)
        or any(not isinstance(row, list) or len(row) != len(labels) for row in rows)
    ):
        raise ValueError("a confusion matrix is square, one row and column per label")
    return [value for row in rows for value in row]


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def scores_of_counts(counts: Mapping[str, Any], scores: Mapping[str, Any]) -> Dict[str, float]:
    """The scores (0-1, by spaCy's names) that a record's checked counts give: a confusion matrix's
    ``cats_macro_f`` and ``cats_accuracy``; true/false positives' and false negatives' F1 as ``ents_f``,
    or as ``tag_acc`` where ``scores`` has no ``ents_f`` (a tagger's record)."""
    if CONFUSION in counts:
        return {"cats_macro_f": macro_f(counts[CONFUSION]), "cats_accuracy": accuracy(counts[CONFUSION])}
    return {"ents_f" if "ents_f" in scores else "tag_acc": f1(*(counts[key] for key in PRF_COUNTS))}


def record_path(records: Path, run_id: str) -> Path:
    return Path(records) / f"{run_id}{RECORD_SUFFIX}"


def read_record(path: Path) -> RunRecord:
    """A record, validated; `ExperimentError` naming the file for anything else."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ExperimentError(
            path,
            expected="a run record (UTF-8 JSON)",
            found=f"{type(err).__name__}: {err}",
            fix="run the study again: a run without a readable record is trained again",
        ) from None
    try:
        return RunRecord.model_validate_json(text)
    except ValidationError as err:
        raise ExperimentError(
            path, expected="a run record", found=first_error(err), fix="remove it and run the study again"
        ) from None


def read_record_of(records: Path, run: Run) -> Optional[RunRecord]:
    """The record of ``run`` in ``records``: None when there is none; `ExperimentError` when the file there
    is not a valid record of this run (a record of another run copied over it is not)."""
    path = record_path(records, run.id)
    if not path.exists():
        return None
    record = read_record(path)
    if record.run != run.id:
        raise ExperimentError(
            path,
            expected=f"the record of run {run.id}",
            found=f"the record of run {record.run}",
            fix="remove it: the study then trains the run again",
        )
    return record


def stored_record(records: Path, run: Run) -> Optional[RunRecord]:
    """The run's record, or None when there is none or it is not a valid record of this run (`read_record_of`)."""
    try:
        return read_record_of(records, run)
    except ExperimentError:
        return None


def not_done_because(run: Run, records: Path) -> List[str]:
    """Why ``run`` is not done: nothing when its record holds the fingerprint of what would be trained
    now; else that there is no record, or the parts of the fingerprint that changed."""
    record = stored_record(records, run)
    if record is None:
        return [f"no record {record_path(records, run.id)}"]
    return changed(record.fingerprint, fingerprint(run))


def is_done(run: Run, records: Path) -> bool:
    """The one done-check: the run's record exists and holds the fingerprint of what would be trained now."""
    return not not_done_because(run, records)


def write_record(records: Path, record: RunRecord) -> Path:
    path = record_path(records, record.run)
    write_atomic(path, record.model_dump_json(indent=1) + "\n")
    return path
