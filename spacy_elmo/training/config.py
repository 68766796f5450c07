"""The pretraining config: a spaCy-style ``.cfg`` file read with confection.

Sections and their settings are the dataclasses below; a missing setting takes
its default, and an unknown or mistyped one stops with confection's
``ConfigValidationError`` naming where it is (``training -> learn_rat``).
``[model]`` holds the biLM architecture with the names of ``BiLMOptions``.
"""
import dataclasses
import difflib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union, get_args, get_origin, get_type_hints

from confection import Config, ConfigValidationError

from ..bilm import BiLMOptions
from ..bilm.precision import PRECISIONS
from ..errors import ElmoError

OPTIMIZERS = ("adam", "sgd", "adagrad")
SCHEDULES = ("constant", "linear", "cosine", "plateau")
SOFTMAXES = ("full", "adaptive")


@dataclass
class PathSettings:
    """Text files or folders (a path or a list of them); dev is optional.
    init: a model folder (options.json + weights.hdf5) to start from."""

    train: Union[str, List[str], None] = None
    dev: Union[str, List[str], None] = None
    init: Optional[str] = None

    def problems(self) -> List[Tuple[str, str]]:
        return [] if self.train else [("train", "no training text: set paths.train (a file, a folder or a list)")]


@dataclass
class SystemSettings:
    seed: int = 0
    threads: int = 0  # torch threads per process; 0 leaves torch's default

    def problems(self) -> List[Tuple[str, str]]:
        return [("threads", "must be >= 0")] if self.threads < 0 else []


@dataclass
class CorpusSettings:
    # "whitespace" (one sentence per line, split on whitespace) or a spaCy
    # pipeline: "blank:LANG", an installed package or a path.
    tokenizer: str = "blank:en"
    # Longer sentences are cut into pieces of this many tokens.
    max_length: int = 100
    # Where the tokenised corpus is kept; null: OUTPUT_DIR/prepared.
    prepared_dir: Optional[str] = None

    def problems(self) -> List[Tuple[str, str]]:
        return [("max_length", "must be >= 1")] if self.max_length < 1 else []


@dataclass
class VocabSettings:
    size: int = 50000  # entries including <S>, </S>, <UNK>; 0: every word
    min_count: int = 1
    path: Optional[str] = None  # a vocab.txt to use instead of counting

    def problems(self) -> List[Tuple[str, str]]:
        out = []
        if self.size != 0 and self.size < 4:
            out.append(("size", "must be 0 (every word) or >= 4 (the three special tokens and a word)"))
        if self.min_count < 1:
            out.append(("min_count", "must be >= 1"))
        return out


@dataclass
class SoftmaxSettings:
    kind: str = "adaptive"  # "full" or "adaptive" (both exact)
    cutoffs: List[int] = field(default_factory=lambda: [4000, 20000])
    div_value: float = 4.0

    def problems(self) -> List[Tuple[str, str]]:
        out = []
        if self.kind not in SOFTMAXES:
            out.append(("kind", f"must be one of {SOFTMAXES}"))
        if any(b <= a for a, b in zip(self.cutoffs, self.cutoffs[1:])) or any(c < 1 for c in self.cutoffs):
            out.append(("cutoffs", "must be positive and increasing"))
        if self.div_value < 1:
            out.append(("div_value", "must be >= 1"))
        return out


@dataclass
class OptimizerSettings:
    name: str = "adam"  # "adam", "sgd" or "adagrad"
    learn_rate: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    momentum: float = 0.0  # sgd
    weight_decay: float = 0.0

    def problems(self) -> List[Tuple[str, str]]:
        out = []
        if self.name not in OPTIMIZERS:
            out.append(("name", f"must be one of {OPTIMIZERS}"))
        if self.learn_rate <= 0:
            out.append(("learn_rate", "must be > 0"))
        return out


@dataclass
class ScheduleSettings:
    # constant | linear (decay to final_factor at max_steps) | cosine (likewise)
    # | plateau (multiply by `decay` when the dev perplexity stops improving)
    name: str = "constant"
    warmup_steps: int = 0
    final_factor: float = 0.0
    decay: float = 0.5
    min_improvement: float = 0.0  # plateau: a dev perplexity drop smaller than this counts as none

    def problems(self) -> List[Tuple[str, str]]:
        out = []
        if self.name not in SCHEDULES:
            out.append(("name", f"must be one of {SCHEDULES}"))
        if self.warmup_steps < 0:
            out.append(("warmup_steps", "must be >= 0"))
        if not 0 < self.decay <= 1:
            out.append(("decay", "must be in (0, 1]"))
        return out


@dataclass
class TrainingSettings:
    tokens_per_batch: int = 4000  # per process, padding included
    max_steps: int = 10000  # 0: no limit
    max_epochs: int = 0  # 0: no limit
    dropout: float = 0.1
    grad_clip: float = 5.0  # 0: no clipping
    eval_every: int = 500  # steps between dev evaluations; 0: only at the end
    checkpoint_every: int = 500
    log_every: int = 50
    # On a GPU: "fp32", "tf32" or "bf16" (see spacy_elmo/bilm/precision.py);
    # the CPU computes in float32 whatever this says.
    precision: str = "fp32"
    optimizer: OptimizerSettings = field(default_factory=OptimizerSettings)
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)

    def problems(self) -> List[Tuple[str, str]]:
        out = []
        for name in ("tokens_per_batch", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                out.append((name, "must be >= 1"))
        for name in ("max_steps", "max_epochs", "eval_every"):
            if getattr(self, name) < 0:
                out.append((name, "must be >= 0"))
        if self.max_steps == 0 and self.max_epochs == 0:
            out.append(("max_steps", "set max_steps or max_epochs (or both) above 0"))
        if self.schedule.name in ("linear", "cosine") and self.max_steps == 0:
            out.append(("max_steps", f"the '{self.schedule.name}' schedule needs max_steps > 0"))
        if not 0 <= self.dropout < 1:
            out.append(("dropout", "must be in [0, 1)"))
        if self.precision not in PRECISIONS:
            out.append(("precision", f"must be one of {PRECISIONS}"))
        if self.grad_clip < 0:
            out.append(("grad_clip", "must be >= 0"))
        return out


@dataclass
class PretrainConfig:
    paths: PathSettings = field(default_factory=PathSettings)
    system: SystemSettings = field(default_factory=SystemSettings)
    corpus: CorpusSettings = field(default_factory=CorpusSettings)
    vocab: VocabSettings = field(default_factory=VocabSettings)
    model: BiLMOptions = field(default_factory=BiLMOptions)
    softmax: SoftmaxSettings = field(default_factory=SoftmaxSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)

    @property
    def train_paths(self) -> List[Path]:
        return _as_paths(self.paths.train)

    @property
    def dev_paths(self) -> List[Path]:
        return _as_paths(self.paths.dev)

    def to_config(self) -> Config:
        """The filled-in config, every setting written out."""
        return Config(_to_plain(self))

    def to_dict(self) -> Dict[str, Any]:
        return _to_plain(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "PretrainConfig":
        """Check `data` (sections of settings) and fill in the defaults.

        Raises ConfigValidationError listing every unknown, mistyped or
        out-of-range setting.
        """
        errors: List[Dict[str, Any]] = []
        config = _build(cls, data, [], errors)
        if not errors:
            try:
                BiLMOptions.from_allennlp(config.model.to_allennlp(), "[model]")
            except ElmoError as err:
                errors.append({"loc": ["model"], "msg": str(err)})
        if errors:
            raise ConfigValidationError(config=Config(data), errors=errors, title="Invalid pretraining config")
        return config


def load_config(path: Union[str, Path], overrides: Optional[Dict[str, Any]] = None) -> PretrainConfig:
    """Read a pretraining ``.cfg``, apply ``{"section.key": value}`` overrides, check it.

    Settings the file leaves out take their defaults first, so that any
    setting can be overridden.
    """
    raw = Config().from_disk(path, interpolate=False)
    filled = Config(PretrainConfig().to_dict()).merge(raw)
    config = Config().from_str(filled.to_str(), overrides=dict(overrides or {}), interpolate=True)
    return PretrainConfig.from_dict(dict(config))


def _as_paths(value: Union[str, List[str], None]) -> List[Path]:
    if value is None:
        return []
    return [Path(value)] if isinstance(value, str) else [Path(v) for v in value]


def _to_plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [_to_plain(v) for v in obj]
    return obj


def _build(cls: type, data: Any, loc: List[str], errors: List[Dict[str, Any]]) -> Any:
    """An instance of dataclass `cls` from `data`, appending problems to `errors`."""
    if not isinstance(data, dict):
        errors.append({"loc": loc, "msg": f"expected a section, found {data!r}"})
        return cls()
    n_errors = len(errors)
    hints = get_type_hints(cls)
    known = [f.name for f in fields(cls)]
    values = {}
    for key, value in data.items():
        if key not in known:
            errors.append({"loc": [*loc, key], "msg": "unknown setting" + _suggestion(key, cls, hints)})
            continue
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            values[key] = _build(hint, value, [*loc, key], errors)
            continue
        ok, converted = _check_type(value, hint)
        if ok:
            values[key] = converted
        else:
            errors.append({"loc": [*loc, key], "msg": f"expected {_type_name(hint)}, found {value!r}"})
    instance = cls(**values)
    if hasattr(instance, "problems") and len(errors) == n_errors:  # values are checked once types are right
        for key, message in instance.problems():
            errors.append({"loc": [*loc, key], "msg": message})
    return instance


def _suggestion(key: str, cls: type, hints: Dict[str, Any]) -> str:
    """A hint naming the setting `key` was probably meant to be."""
    known = [f.name for f in fields(cls)]
    # Settings of the subsections too: "learn_rat" in [training] -> optimizer.learn_rate.
    candidates = {name: name for name in known}
    for name in known:
        if dataclasses.is_dataclass(hints[name]):
            candidates.update({sub.name: f"{name}.{sub.name}" for sub in fields(hints[name])})
    close = difflib.get_close_matches(key, list(candidates), n=1)
    if close:
        return f" (did you mean '{candidates[close[0]]}'?)"
    return f" (expected one of: {', '.join(known)})"


def _check_type(value: Any, hint: Any) -> Tuple[bool, Any]:
    origin = get_origin(hint)
    if hint is Any:
        return True, value
    if origin is Union:
        for option in get_args(hint):
            ok, converted = _check_type(value, option)
            if ok:
                return True, converted
        return False, value
    if hint is type(None):
        return value is None, value
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value
    if hint is str:
        return isinstance(value, str), value
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False, value
        args = get_args(hint)
        if origin is tuple:
            if len(args) != len(value):
                return False, value
            checked = [_check_type(v, a) for v, a in zip(value, args)]
        else:
            checked = [_check_type(v, args[0]) for v in value]
        if not all(ok for ok, _ in checked):
            return False, value
        converted = [c for _, c in checked]
        return True, tuple(converted) if origin is tuple else converted
    return False, value


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Union:
        return " or ".join(_type_name(a) for a in get_args(hint))
    if hint is type(None):
        return "null"
    if origin in (list, tuple):
        return "a list of " + ", ".join(_type_name(a) for a in get_args(hint))
    return getattr(hint, "__name__", str(hint))
