"""The pretraining config: a spaCy-style ``.cfg`` file read with confection.

Each section is a pydantic model below, checked through confection as spaCy
checks its ``[training]`` section (``spacy.schemas``); a missing setting takes
its default. ``[model]`` holds the biLM architecture with the names of
``BiLMOptions``. The softmax, the optimiser and the schedule are registered
functions (training/registry.py), named as spaCy names its parts:
``[training.optimizer] @pretrain_optimizers = "spacy-elmo.Adam.v1"``. The other
settings of such a section are the function's arguments: checked against its
signature (their types and the bounds their annotations give), filled in from
its defaults, and passed to it when confection's ``registry.resolve`` resolves
the section (`resolve`). A wrong setting stops with confection's
``ConfigValidationError``, titled E313, naming each setting (``training ->
optimizer -> learn_rat``), what it expected and what it found; an unknown
function's name is listed with the registered ones.
"""
import configparser
import difflib
import inspect
import re
from dataclasses import MISSING, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import (
    Any, Callable, Dict, List, Literal, Optional, Tuple, Type, Union, get_args, get_origin, get_type_hints,
)

from confection import Config, ConfigValidationError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from ...bilm import BiLMOptions
from ...bilm.precision import PRECISIONS
from ...errors import ConfigError, ElmoError, Errors
from ..registry import OPTIMIZERS, SCHEDULES, SOFTMAXES, registry

# The environment variable `spacy train` reads --section.key overrides from;
# the commands here read it too (weasel's parse_config_overrides).
CONFIG_OVERRIDES_ENV = "SPACY_CONFIG_OVERRIDES"

# Every section: an unknown setting is an error, not ignored.
SECTION = ConfigDict(extra="forbid")
# Strict scalars, as the config parser gives them; a float setting takes an int too.
_STRICT = {int: StrictInt, str: StrictStr, bool: StrictBool, float: StrictFloat}
TextPaths = Union[StrictStr, List[StrictStr], None]


@dataclass(frozen=True)
class Part:
    """A section that names a registered function: where it is, and the registry of its function."""

    path: Tuple[str, ...]
    registry: str

    @property
    def key(self) -> str:
        """The key that names the function, as spaCy's ``@optimizers``."""
        return "@" + self.registry


PARTS = (Part(("softmax",), SOFTMAXES), Part(("training", "optimizer"), OPTIMIZERS),
         Part(("training", "schedule"), SCHEDULES))


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
    # A registered tokenizer ("spacy-elmo.WhitespaceTokenizer.v1": one sentence a line, split
    # on whitespace) or a spaCy pipeline: "blank:LANG", an installed package or a path.
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


class PartSection(BaseModel):
    """A section that names a registered function by its ``@…`` key (`function`);
    its other settings are that function's arguments (`_fill_part` checks them)."""

    model_config = ConfigDict(extra="allow")

    def promise(self) -> Dict[str, Any]:
        """The section as confection resolves it: ``{"@registry": name, argument: value, …}``."""
        return self.model_dump(by_alias=True)


class SoftmaxSection(PartSection):
    # A registered softmax: "spacy-elmo.FullSoftmax.v1" or "spacy-elmo.AdaptiveSoftmax.v1", both exact.
    function: StrictStr = Field("spacy-elmo.AdaptiveSoftmax.v1", alias="@" + SOFTMAXES)


class OptimizerSection(PartSection):
    # A registered optimiser: "spacy-elmo.Adam.v1", "spacy-elmo.SGD.v1" or "spacy-elmo.Adagrad.v1".
    function: StrictStr = Field("spacy-elmo.Adam.v1", alias="@" + OPTIMIZERS)


class ScheduleSection(PartSection):
    # A registered schedule (run/optim.py): "spacy-elmo.constant.v1", "….linear.v1", "….cosine.v1", "….plateau.v1".
    function: StrictStr = Field("spacy-elmo.constant.v1", alias="@" + SCHEDULES)


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
    optimizer: OptimizerSection = Field(default_factory=OptimizerSection)
    schedule: ScheduleSection = Field(default_factory=ScheduleSection)

    @model_validator(mode="after")
    def _an_end(self) -> "TrainingSettings":
        if self.max_steps == 0 and self.max_epochs == 0:
            raise ValueError("set max_steps or max_epochs (or both) above 0")
        return self


def resolve(section: PartSection) -> Any:
    """The part `section` names: its registered function called with its arguments, by confection."""
    return registry.resolve({"part": section.promise()})["part"]


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
    softmax: SoftmaxSection = Field(default_factory=SoftmaxSection)
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
        """Check `data` (sections of settings) and fill in the defaults, those
        of the registered functions its sections name included.

        Raises ConfigValidationError (E313) listing every unknown, mistyped or
        out-of-range setting.
        """
        data = _copy_sections(data)
        errors = []
        try:
            Config(data).validate(cls)
        except ConfigValidationError as err:
            errors += [_explain(e, _settings_at([str(p) for p in e.get("loc", ())[:-1]])) for e in err.errors or []]
        for part in PARTS:
            errors += _fill_part(part, data)
        if errors:
            title = Errors.E313.format(where=where, n=len(errors))
            raise ConfigValidationError(config=Config(data), errors=errors, title=title)
        return cls.model_validate(data)

    def parts(self) -> Dict[str, PartSection]:
        """The sections that name registered functions, by the name of their part."""
        return {"softmax": self.softmax, "optimizer": self.training.optimizer, "schedule": self.training.schedule}


def load_config(path: Union[str, Path], overrides: Optional[Dict[str, Any]] = None) -> PretrainConfig:
    """Read a pretraining ``.cfg``, apply ``{"section.key": value}`` overrides, check it.

    Settings the file leaves out take their defaults first, so that any
    setting can be overridden; a section that names another registered
    function than the default's takes that function's defaults (confection
    merges no defaults into it).
    """
    raw = read_cfg(path, interpolate=False)
    defaults = PretrainConfig.model_construct().to_dict()  # no check: paths.train has no default
    filled = Config(defaults).merge(raw)
    try:
        config = Config().from_str(filled.to_str(), overrides=dict(overrides or {}), interpolate=True)
    except ConfigValidationError as err:
        unknown = err.__context__
        if not isinstance(unknown, configparser.InterpolationError):
            raise
        raise ConfigError("E324", where=f"'{path}'", reason=_unknown_variable(unknown)) from None
    return PretrainConfig.from_dict(dict(config), where=f"'{path}'")


def _copy_sections(data: Dict[str, Any]) -> Dict[str, Any]:
    """`data` with every section (a dict, at any depth) copied, so that filling it in changes no caller's dict."""
    return {key: _copy_sections(value) if isinstance(value, dict) else value for key, value in data.items()}


def _fill_part(part: Part, data: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Fill in the section of `part` in `data`: the default function where it
    names none, then that function's defaults for the arguments it leaves out.
    RETURNS: the errors of its settings, as `_explain` words them (none: it is filled in)."""
    section = data
    for name in part.path:
        section = section.setdefault(name, {})
        if not isinstance(section, dict):
            return []  # the check of the sections names it
    name = section.setdefault(part.key, _section_at(list(part.path)).model_fields["function"].default)
    if not isinstance(name, str):
        return []  # likewise
    if not registry.has(part.registry, name):
        names = list(getattr(registry, part.registry).get_all())
        message = f"expected {_either(names)}; found {name!r}"
        return [{"loc": [*part.path, part.key], "msg": message, "type": "value_error"}]
    arguments = _arguments(registry.get(part.registry, name))
    try:
        checked = arguments.model_validate({key: value for key, value in section.items() if key != part.key})
    except ValidationError as err:
        settings = {key: key for key in arguments.model_fields}
        return [_explain({**e, "loc": (*part.path, *e["loc"])}, settings, function=name) for e in err.errors()]
    section.update(checked.model_dump())
    return []


@lru_cache(maxsize=None)
def _arguments(function: Callable) -> Type[BaseModel]:
    """The parameters of a registered function as a section: strictly typed, with
    the bounds their annotations give and their defaults, and no other setting."""
    hints = get_type_hints(function, include_extras=True)
    params = inspect.signature(function).parameters.values()
    return create_model(
        f"{function.__name__}_arguments",
        __config__=SECTION,
        **{p.name: (_strict(hints.get(p.name, Any)), ... if p.default is p.empty else p.default)
           for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)},
    )


def _either(names: List[str]) -> str:
    """'a', 'b' or 'c', in the words of pydantic's own message for a choice."""
    shown = [repr(n) for n in names]
    return f"{', '.join(shown[:-1])} or {shown[-1]}" if len(shown) > 1 else "".join(shown)


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


def _as_paths(value: Union[str, List[str], None]) -> List[Path]:
    if value is None:
        return []
    return [Path(value)] if isinstance(value, str) else [Path(v) for v in value]


def _explain(error: Dict[str, Any], settings: Dict[str, str], function: Optional[str] = None) -> Dict[str, Any]:
    """A pydantic error as the user reads it: the setting, what was expected,
    what was found, and for an unknown setting the one of `settings` (those its
    section takes, as `_settings_at` names them) it was probably meant to be.
    `function`: the registered function whose argument the setting is."""
    loc = [str(p) for p in error.get("loc", ())]
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        msg = "unknown setting" + _suggestion(loc[-1], settings)
    elif kind == "missing" and function is not None:
        msg = f"missing: '{function}' takes it and has no default for it"
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


def _settings_at(loc: List[str]) -> Dict[str, str]:
    """The settings of the section at `loc`, each as a hint names it: its own by
    their key, its subsections' by the path from it ("optimizer.@pretrain_optimizers")."""
    section = _section_at(loc)
    if section is None:
        return {}
    settings = {}
    for name, field in section.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            settings.update({sub.alias or key: f"{name}.{sub.alias or key}"
                             for key, sub in field.annotation.model_fields.items()})
    return {**settings, **{field.alias or name: field.alias or name for name, field in section.model_fields.items()}}


def _suggestion(key: str, settings: Dict[str, str]) -> str:
    """A hint naming the setting `key` was probably meant to be."""
    if not settings:
        return ""
    close = difflib.get_close_matches(key, list(settings), n=1)
    if close:
        return f" (did you mean '{settings[close[0]]}'?)"
    return f" (expected one of: {', '.join(name for name, shown in settings.items() if name == shown)})"
