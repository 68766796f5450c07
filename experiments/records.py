"""The workflow's records, one schema for reading and writing them.

Two kinds of file hold a study's results:

* a **seed's metrics**, ``METRICS/<run>/seedN.json``: spaCy's ``evaluate`` output for one
  trained seed (``experiments.demo.evaluate_seeds``), a JSON object of scores in [0, 1]
  (``ents_f``, ``cats_macro_f``, ...) beside other entries (``speed``, per-type tables);
  `read_seed_score` reads the one score a report needs (`SeedMetrics`);
* a **record**, ``RECORD.json`` (``experiments.report.paired --json``): the score's name,
  the reference run, and per run its mean, std and number of seeds, each seed's score in
  percent (``by_seed``) and, for every run but the reference, its comparison with the
  reference (`ComparisonRecord`, `RunSummary`, `Comparison`); `read_comparison` and `write_comparison`.

Every reader checks the file against the schema and raises
``experiments.errors.ExperimentError`` naming the file, what was expected and what was found
(a cut file, a list, a null or NaN score, bytes that are not UTF-8, a missing entry): a
command run through ``run_app`` prints it as one line and exits 1. Records written before
the Monte-Carlo sign-flip test (no ``sign_flip_se``/``sign_flip_method``) read as exact.

`parse_seeds` reads a command's ``--seeds "0 1 2"`` (seeds name the seedN files above).
"""

import json
import math
import statistics
from pathlib import Path
from typing import Annotated, Any, Dict, List, Optional, Union

import srsly
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, model_validator

from experiments.errors import ExperimentError
from experiments.files import read_json
from spacy_elmo.util import atomic_path

# A score or statistic: a finite number (JSON's NaN and Infinity, null, a string or a bool are refused).
Finite = Field(allow_inf_nan=False)
Score = Annotated[float, Field(strict=True, allow_inf_nan=False)]
# Records keep 10 significant digits: a mean further than this from its seeds' mean is not theirs.
MEAN_TOLERANCE = 1e-6


class SeedMetrics(RootModel[Dict[str, Any]]):
    """A seedN.json: a JSON object of scores (entries a report does not read are kept as they are)."""

    def score(self, key: str) -> float:
        """The score ``key`` as a finite number (a `ValidationError` for null, NaN, a string...)."""
        return _SeedScore(value=self.root[key]).value


class _SeedScore(BaseModel):
    value: Score


class Comparison(BaseModel):
    """A run against the reference, over the seeds both have (``experiments.report.comparison.gains``)."""

    model_config = ConfigDict(extra="allow")

    absolute: float = Finite
    relative_error_reduction: Optional[float] = Finite  # None against a perfect reference
    ci95_low: Optional[float] = Field(None, allow_inf_nan=False)
    ci95_high: Optional[float] = Field(None, allow_inf_nan=False)
    sign_flip_p: Optional[float] = Field(None, ge=0.0, le=1.0)
    sign_flip_se: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    sign_flip_method: str = "exact"
    pairs: Optional[int] = Field(None, ge=0)


class RunSummary(BaseModel):
    """One run of a record: mean ± std of its seeds' scores (percent) and each seed's score."""

    model_config = ConfigDict(extra="forbid")

    mean: float = Finite
    std: float = Field(allow_inf_nan=False, ge=0.0)
    n: int = Field(ge=1)
    by_seed: Dict[str, Score] = Field(min_length=1)
    against_first: Optional[Comparison] = None

    @model_validator(mode="after")
    def _agrees_with_its_seeds(self) -> "RunSummary":
        mean = statistics.fmean(self.by_seed.values())
        if self.n != len(self.by_seed) or abs(self.mean - mean) > MEAN_TOLERANCE * max(1.0, abs(mean)):
            raise ValueError(
                f"n = {self.n} and mean = {self.mean} do not match by_seed ({len(self.by_seed)} seeds, mean {mean})"
            )
        return self


class ComparisonRecord(BaseModel):
    """A RECORD.json: the score, the reference run and every run compared with it."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1)
    reference: str
    runs: Dict[str, RunSummary] = Field(min_length=1)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{type(value).__name__} {json.dumps(value)[:60]}"


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the top level"
    if first["type"] == "missing":
        return f"no entry {where}"
    return f"{_describe(first.get('input'))} at {where} ({first['msg'].lower()})"


def read_seed_score(path: Union[str, Path], key: str) -> float:
    """The score ``key`` of a seedN.json, a finite number, in percent (100 × the file's value)."""
    what = "a seed's scores (a JSON object as `experiments.demo.evaluate_seeds` writes)"
    content = read_json(Path(path), what)
    try:
        metrics = SeedMetrics.model_validate(content).root
    except ValidationError:
        raise ExperimentError(path, expected=what, found=_describe(content)) from None
    if key not in metrics:
        raise ExperimentError(
            path,
            expected=f"the score '{key}'",
            found=f"only the scores {', '.join(sorted(metrics)[:12])}" if metrics else "no score",
            fix="name a score the file holds, or evaluate the run for this task",
        )
    try:
        return 100.0 * SeedMetrics(metrics).score(key)
    except ValidationError:
        raise ExperimentError(
            path,
            expected=f"the score '{key}' as a finite number",
            found=_describe(metrics[key]),
            fix="spaCy writes null when nothing was scored: check the run's dev/test data and evaluate it again",
        ) from None


def read_comparison(path: Union[str, Path]) -> ComparisonRecord:
    """A RECORD.json checked against `ComparisonRecord`."""
    what = "a record written by `experiments.report.paired --json`"
    content = read_json(Path(path), what)
    try:
        return ComparisonRecord.model_validate(content)
    except ValidationError as err:
        raise ExperimentError(path, expected=what, found=_first_error(err)) from None


def write_comparison(path: Union[str, Path], record: Union[ComparisonRecord, Dict[str, Any]]) -> None:
    """Write a record atomically (checked against `ComparisonRecord` first); a folder in its place is refused."""
    path = Path(path)
    if path.is_dir():
        raise ExperimentError(
            path,
            expected="a file name for the record",
            found="a folder",
            fix="name a .json file (e.g. FOLDER/record.json)",
        )
    record = ComparisonRecord.model_validate(record) if not isinstance(record, ComparisonRecord) else record
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            srsly.write_json(tmp, record.model_dump(exclude_unset=True))
    except OSError as err:
        raise ExperimentError(path, expected="a place the record can be written", found=f"{err.strerror}") from None


def parse_seeds(text: str, where: str = "--seeds") -> List[int]:
    """``"0 1 2"`` (spaces or commas) as ``[0, 1, 2]``: whole numbers >= 0, each once, at least one."""
    pieces = text.replace(",", " ").split()
    bad = [piece for piece in pieces if not piece.isdigit()]
    if not pieces or bad:
        raise ExperimentError(where, expected='whole numbers >= 0 separated by spaces, e.g. "0 1 2"', found=repr(text))
    seeds = [int(piece) for piece in pieces]
    if len(set(seeds)) != len(seeds):
        raise ExperimentError(where, expected="each seed once", found=repr(text))
    return seeds
