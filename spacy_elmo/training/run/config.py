"""The pretraining config: a spaCy-style ``.cfg`` file read with confection.

Each section is a pydantic model below, checked through confection as spaCy
checks its ``[training]`` section (``spacy.schemas``); a missing setting takes
its default. A wrong setting stops with confection's ``ConfigValidationError``,
coded E313, naming each setting (``training -> optimizer -> learn_rat``), what
it expected and what it found. ``[model]`` holds the biLM architecture with the
names of ``BiLMOptions``. The softmax, the optimiser and the schedule are
registered functions (training/registry.py), named as spaCy names its parts:
``@pretrain_optimizers = "spacy-elmo.Adam.v1"``. An unknown name lists those
registered, and each function checks the settings it takes when the config is
loaded. A config or run folder written before the names were versioned
(``name = "adam"``, ``kind = "adaptive"``) reads as the same config in the
new names (`upgrade_names`).
"""
import configparser
import difflib
import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Type, Union, get_args, get_origin, get_type_hints

from confection import Config, ConfigValidationError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
    field_validator,
    model_validator,
)

from ...bilm import BiLMOptions
from ...bilm.precision import PRECISIONS
from ...errors import ConfigError, ElmoError, Errors
from ..registry import LEGACY_NAMES, OPTIMIZERS, SCHEDULES, SOFTMAXES, build, is_registered, registered

# The environment variable `spacy train` reads --section.key overrides from;
# the commands here read it too (weasel's parse_config_overrides).
CONFIG_OVERRIDES_ENV = "SPACY_CONFIG_OVERRIDES"

# Every section: an unknown setting is an error, not ignored.
SECTION = ConfigDict(extra="forbid")
# Strict scalars, as the config parser gives them; a float setting takes an int too.
_STRICT = {int: StrictInt, str: StrictStr, bool: StrictBool, float: StrictFloat}
TextPaths = Union[StrictStr, List[StrictStr], None]

# Where each part's registered function is named: its section, its key (as
# spaCy's ``@optimizers``), the registry, and the key that named it before the
# names were versioned.
PARTS = (
    (("softmax",), "@" + SOFTMAXES, SOFTMAXES, "kind"),
    (("training", "optimizer"), "@" + OPTIMIZERS, OPTIMIZERS, "name"),
    (("training", "schedule"), "@" + SCHEDULES, SCHEDULES, "name"),
)


def upgrade_names(data: Dict[str, Any]) -> Dict[str, Any]:
    """`data` (sections of settings) with each part named in the versioned
    form: ``[training.optimizer] name = "adam"`` becomes ``@pretrain_optimizers
    = "spacy-elmo.Adam.v1"``. A section that uses both keys is left as it is,
    for the check to refuse. A copy; `data` is not changed."""
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in data.items()}
    for path, key, kind, old_key in PARTS:
        parent, section = out, None
        for i, name in enumerate(path):
            node = parent.get(name)
            if not isinstance(node, dict):
                break
            node = parent[name] = dict(node)
            parent, section = node, (node if i == len(path) - 1 else None)
        if section is not None and old_key in section and key not in section:
            old = section.pop(old_key)
            section[key] = LEGACY_NAMES[kind].get(old, old) if isinstance(old, str) else old
    return out


def _upgrade_overrides(overrides: Dict[str, Any]) -> Dict[str, Any]:
    """``--training.optimizer.name adam`` read as ``--training.optimizer.@pretrain_optimizers spacy-elmo.Adam.v1``."""
    out = dict(overrides)
    for path, key, kind, old_key in PARTS:
        old = ".".join((*path, old_key))
        if old in out:
            value = out.pop(old)
            out[".".join((*path, key))] = LEGACY_NAMES[kind].get(value, value) if isinstance(value, str) else value
    return out


def _registered_name(kind: str) -> Any:
    """A field validator: the value names a function of the registry `kind`
    (an unknown name lists the registered ones, in the words of pydantic's
    own message for a choice)."""

    def check(cls, value: str) -> str:
        if not is_registered(kind, value):
            names = [repr(n) for n in registered(kind)]
            listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
            raise ValueError(f"expected {listed}")
        return value

    return classmethod(check)


class PathSettings(BaseModel):
    """Text files or folders (a path or a list of them); dev is optional.
    init: a model folder (options.json + weights.hdf5), or a model's name
    ("elmo-en-small"), to start from."""

    model_config = SECTION
    train: TextPaths = Field(None, validate_default=True)
    dev: TextPaths = None
    init: Optional[StrictStr] = None

    @field_validator("train")
    @classmethod
    def _some_text(cls, value: Any) -> Any:
        if not value:
            raise ValueError("no training text: set paths.train (a file, a folder or a list)")
        return value


class SystemSettings(BaseModel):
    model_config = SECTION
    seed: StrictInt = 0
    threads: StrictInt = Field(0, ge=0)  # torch threads per process; 0 leaves torch's default


class CorpusSettings(BaseModel):
    model_config = SECTION
    # "whitespace" (one sentence per line, split on whitespace) or a spaCy
    # pipeline: "blank:LANG", an installed package or a path.
    tokenizer: StrictStr = "blank:en"
    # Longer sentences are cut into pieces of this many tokens.
    max_length: StrictInt = Field(100, ge=1)
    # Where the tokenised corpus is kept; null: OUTPUT_DIR/prepared.
    prepared_dir: Optional[StrictStr] = None


class VocabSettings(BaseModel):
    model_config = SECTION
    size: StrictInt = 50000  # entries including <S>, </S>, <UNK>; 0: every word
    min_count: StrictInt = Field(1, ge=1)
    # a vocab.txt to use instead of counting, or a model (its name or folder) whose vocab.txt to use
    path: Optional[StrictStr] = None

    @field_validator("size")
    @classmethod
    def _room_for_specials(cls, value: int) -> int:
        if value != 0 and value < 4:
            raise ValueError("must be 0 (every word) or >= 4 (the three special tokens and a word)")
        return value


class SoftmaxSettings(BaseModel):
    model_config = SECTION
    # A registered softmax: "spacy-elmo.FullSoftmax.v1" or "spacy-elmo.AdaptiveSoftmax.v1", both exact.
    kind: StrictStr = Field("spacy-elmo.AdaptiveSoftmax.v1", alias="@" + SOFTMAXES)
    cutoffs: List[StrictInt] = [4000, 20000]
    div_value: StrictFloat = Field(4.0, ge=1)

    @field_validator("cutoffs")
    @classmethod
    def _increasing(cls, value: List[int]) -> List[int]:
        if any(b <= a for a, b in zip(value, value[1:])) or any(c < 1 for c in value):
            raise ValueError("must be positive and increasing")
        return value

    _registered = field_validator("kind")(_registered_name(SOFTMAXES))

    @model_validator(mode="after")
    def _suits_its_function(self) -> "SoftmaxSettings":
        softmax_factory(self)  # the function's own check of the settings it takes
        return self


class OptimizerSettings(BaseModel):
    """The settings of the registered optimisers (run/optim.py); each takes those it names."""

    model_config = SECTION
    # A registered optimiser: "spacy-elmo.Adam.v1", "spacy-elmo.SGD.v1" or "spacy-elmo.Adagrad.v1".
    name: StrictStr = Field("spacy-elmo.Adam.v1", alias="@" + OPTIMIZERS)
    learn_rate: StrictFloat = Field(0.001, gt=0)
    beta1: StrictFloat = 0.9
    beta2: StrictFloat = 0.999
    eps: StrictFloat = 1e-8
    momentum: StrictFloat = 0.0  # sgd
    weight_decay: StrictFloat = 0.0

    _registered = field_validator("name")(_registered_name(OPTIMIZERS))


class ScheduleSettings(BaseModel):
    """constant | linear (decay to final_factor at max_steps) | cosine (likewise)
    | plateau (multiply by `decay` when the dev perplexity stops improving).
    Each after a linear warm-up over `warmup_steps`."""

    model_config = SECTION
    # A registered schedule (run/optim.py): "spacy-elmo.constant.v1", "….linear.v1", "….cosine.v1", "….plateau.v1".
    name: StrictStr = Field("spacy-elmo.constant.v1", alias="@" + SCHEDULES)
    warmup_steps: StrictInt = Field(0, ge=0)
    final_factor: StrictFloat = Field(0.0, ge=0, le=1)
    decay: StrictFloat = Field(0.5, gt=0, le=1)
    min_improvement: StrictFloat = Field(0.0, ge=0)  # plateau: a dev perplexity drop smaller than this counts as none

    _registered = field_validator("name")(_registered_name(SCHEDULES))


class TrainingSettings(BaseModel):
    model_config = SECTION
    tokens_per_batch: StrictInt = Field(4000, ge=1)  # per process, padding included
    max_steps: StrictInt = Field(10000, ge=0)  # 0: no limit
    max_epochs: StrictInt = Field(0, ge=0)  # 0: no limit
    dropout: StrictFloat = Field(0.1, ge=0, lt=1)
    grad_clip: StrictFloat = Field(5.0, ge=0)  # 0: no clipping
    eval_every: StrictInt = Field(500, ge=0)  # steps between dev evaluations; 0: only at the end
    checkpoint_every: StrictInt = Field(500, ge=1)
    log_every: StrictInt = Field(50, ge=1)
    # "fp32", "tf32" (a GPU's TF32 products; float32 on a CPU) or "bf16" (autocast: the products
    # in bfloat16, master weights float32; on a CPU only with AMX or AVX-512 BF16, else float32
    # with a warning). See spacy_elmo/bilm/precision.py.
    precision: Literal[PRECISIONS] = "fp32"
    optimizer: OptimizerSettings = Field(default_factory=OptimizerSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)

    @model_validator(mode="after")
    def _an_end(self) -> "TrainingSettings":
        if self.max_steps == 0 and self.max_epochs == 0:
            raise ValueError("set max_steps or max_epochs (or both) above 0")
        # The registered functions' own checks of the settings they take (a linear decay needs an end).
        optimizer_factory(self)
        schedule_factory(self)
        return self


def softmax_factory(softmax: SoftmaxSettings) -> Any:
    """The registered softmax's factory: (input dimension, vocabulary size) -> the head."""
    section = softmax.model_dump()
    return build(SOFTMAXES, section.pop("kind"), section)


def optimizer_factory(training: TrainingSettings) -> Any:
    """The registered optimiser's factory: parameters -> a torch optimiser."""
    section = training.optimizer.model_dump()
    return build(OPTIMIZERS, section.pop("name"), section)


def schedule_factory(training: TrainingSettings) -> Any:
    """The registered schedule's factory: a torch optimiser -> its `Schedule`."""
    section = training.schedule.model_dump()
    return build(SCHEDULES, section.pop("name"), {**section, "max_steps": training.max_steps})


def _strict(hint: Any) -> Any:
    """`hint` with strict scalars (List[Tuple[int, int]] -> List[Tuple[StrictInt, StrictInt]])."""
    if hint in _STRICT:
        return _STRICT[hint]
    args = get_args(hint)
    if not args:
        return hint
    return get_origin(hint)[tuple(_strict(a) for a in args)] if get_origin(hint) is not Union else Union[
        tuple(_strict(a) for a in args)
    ]


def _model_section() -> Type[BaseModel]:
    """[model]: the fields of BiLMOptions, strictly typed, then BiLMOptions' own check."""
    hints = get_type_hints(BiLMOptions)
    specs = {
        f.name: (_strict(hints[f.name]), f.default if f.default is not MISSING else Field(default_factory=f.default_factory))
        for f in fields(BiLMOptions)
    }

    def check(self: BaseModel) -> BaseModel:
        BiLMOptions.from_allennlp(self.options.to_allennlp(), "[model]")  # an ElmoError is a ValueError
        return self

    return create_model(
        "ModelSettings",
        __config__=SECTION,
        __validators__={"_bilm_check": model_validator(mode="after")(check)},
        **specs,
    )


class ModelSettings(_model_section()):
    @property
    def options(self) -> BiLMOptions:
        return BiLMOptions(**{f.name: getattr(self, f.name) for f in fields(BiLMOptions)})

    @classmethod
    def from_options(cls, options: BiLMOptions) -> "ModelSettings":
        return cls(**{f.name: getattr(options, f.name) for f in fields(BiLMOptions)})


class PretrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    paths: PathSettings = Field(default_factory=PathSettings.model_construct)
    system: SystemSettings = Field(default_factory=SystemSettings)
    corpus: CorpusSettings = Field(default_factory=CorpusSettings)
    vocab: VocabSettings = Field(default_factory=VocabSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    softmax: SoftmaxSettings = Field(default_factory=SoftmaxSettings)
    training: TrainingSettings = Field(default_factory=TrainingSettings)

    @property
    def train_paths(self) -> List[Path]:
        return _as_paths(self.paths.train)

    @property
    def dev_paths(self) -> List[Path]:
        return _as_paths(self.paths.dev)

    def to_config(self) -> Config:
        """The filled-in config, every setting written out."""
        return Config(self.to_dict())

    def to_dict(self) -> Dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_dict(cls, data: Dict[str, Any], where: str = "(from a dict)") -> "PretrainConfig":
        """Check `data` (sections of settings) and fill in the defaults.

        Raises ConfigValidationError (E313) listing every unknown, mistyped or
        out-of-range setting.
        """
        data = upgrade_names(data)
        config = Config(data)
        try:
            config.validate(cls)
        except ConfigValidationError as err:
            errors = [_explain(e) for e in err.errors or []]
            title = Errors.E313.format(where=where, n=len(errors))
            raise ConfigValidationError(config=config, errors=errors, title=title) from None
        return cls.model_validate(data)


def load_config(path: Union[str, Path], overrides: Optional[Dict[str, Any]] = None) -> PretrainConfig:
    """Read a pretraining ``.cfg``, apply ``{"section.key": value}`` overrides, check it.

    Settings the file leaves out take their defaults first, so that any
    setting can be overridden.
    """
    raw = upgrade_names(read_cfg(path, interpolate=False))
    defaults = PretrainConfig.model_construct().to_dict()  # no check: paths.train has no default
    # confection merges no defaults into a section that names another function than
    # the defaults' ("@pretrain_optimizers"): every section shares its settings here.
    for section_path, key, _, _ in PARTS:
        _section(defaults, section_path).pop(key)
    filled = Config(defaults).merge(raw)
    try:
        config = Config().from_str(filled.to_str(), overrides=_upgrade_overrides(dict(overrides or {})), interpolate=True)
    except ConfigValidationError as err:
        unknown = err.__context__
        if not isinstance(unknown, configparser.InterpolationError):
            raise
        raise ConfigError("E324", where=f"'{path}'", reason=_unknown_variable(unknown)) from None
    return PretrainConfig.from_dict(dict(config), where=f"'{path}'")


def _unknown_variable(err: configparser.InterpolationError) -> str:
    """Where the config refers to a variable it lacks, as the user wrote it."""
    if isinstance(err, configparser.InterpolationMissingOptionError):
        return f"[{err.section}] {err.option} = {err.args[2]} names '{err.reference}', which is not set"
    return f"[{err.section}] {err.option}: {err.message.strip()}"


# What confection and configparser add to a parse error that names no file.
_CONFECTION_NOISE = re.compile(r"Config validation error|Make sure the sections and values are formatted "
                               r"correctly\.|file: '<string>', |While reading from '<string>' ")


def read_cfg(
    path: Union[str, Path], *, interpolate: bool, error: Optional[Callable[[str], ElmoError]] = None
) -> Config:
    """The sections of a ``.cfg`` file; E318 naming the file (or `error(reason)`)
    when it is not UTF-8 text in the config format (confection's own message
    would name ``'<string>'``)."""
    try:
        text = Path(path).read_bytes().decode("utf8")
        if "\x00" in text:
            raise ValueError("it holds NUL bytes: it is a binary file")
        return Config().from_str(text, interpolate=interpolate)
    except UnicodeDecodeError as err:
        reason = f"it is not UTF-8 text (byte {err.start}: {err.object[err.start:err.start + 1]!r})"
    except (ValueError, configparser.Error) as err:  # ConfigValidationError is a ValueError
        reason = " ".join(_CONFECTION_NOISE.sub("", str(err)).split())
    except OSError as err:
        reason = str(err)
    if error is not None:
        raise error(reason)
    raise ConfigError("E318", path=path, reason=reason)


def _section(data: Dict[str, Any], path: Tuple[str, ...]) -> Dict[str, Any]:
    for name in path:
        data = data[name]
    return data


def _as_paths(value: Union[str, List[str], None]) -> List[Path]:
    if value is None:
        return []
    return [Path(value)] if isinstance(value, str) else [Path(v) for v in value]


def _explain(error: Dict[str, Any]) -> Dict[str, Any]:
    """A pydantic error as the user reads it: the setting, what was expected,
    what was found, and for an unknown name the setting it was probably meant to be."""
    loc = [str(p) for p in error.get("loc", ())]
    kind = error.get("type", "")
    old_keys = {(*path, old_key): key for path, key, _, old_key in PARTS}
    if kind == "extra_forbidden" and tuple(loc) in old_keys:
        msg = f"the old key of {old_keys[tuple(loc)]}, which the section has too: keep only {old_keys[tuple(loc)]}"
    elif kind == "extra_forbidden":
        msg = "unknown setting" + _suggestion(loc[-1], _section_at(loc[:-1]))
    else:
        if kind == "value_error":  # our own checks: the message names what is expected
            expected = str(error.get("ctx", {}).get("error", error.get("msg", "")))
        else:
            expected = str(error.get("msg", "")).replace("Input should be", "expected", 1)
        found = error.get("input")
        msg = expected if isinstance(found, dict) else f"{expected}; found {found!r}"
    return {"loc": loc, "msg": msg, "type": kind}


def _section_at(loc: List[str]) -> Optional[Type[BaseModel]]:
    section: Any = PretrainConfig
    for name in loc:
        field = section.model_fields.get(name)
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return None
        section = field.annotation
    return section


def _suggestion(key: str, section: Optional[Type[BaseModel]]) -> str:
    """A hint naming the setting `key` was probably meant to be."""
    if section is None:
        return ""
    known = [field.alias or name for name, field in section.model_fields.items()]
    # Settings of the subsections too: "learn_rat" in [training] -> optimizer.learn_rate.
    candidates = {name: name for name in known}
    for name, field in section.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            candidates.update({sub.alias or key: f"{name}.{sub.alias or key}"
                               for key, sub in field.annotation.model_fields.items()})
    close = difflib.get_close_matches(key, list(candidates), n=1)
    if close:
        return f" (did you mean '{candidates[close[0]]}'?)"
    return f" (expected one of: {', '.join(known)})"
