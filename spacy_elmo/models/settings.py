"""The settings of our registered architectures and layers, checked in one place.

confection checks only the types of a registered function's arguments, so each
function checks its settings against a pydantic model here, whether it was
built from a config or called from Python: any setting of the wrong type or
out of range is one coded error (E411) that lists them all.

A model keeps the settings that do not change its weights (how the biLM cuts,
batches and computes, how a mix mixes, a dropout rate) as one
`ConfigSettings` attr: the config that built it is their one store, whatever
a saved model holds.
"""

import math
from typing import Any, Dict, Iterator, List, Literal, Mapping, Optional, Type, Union

import srsly
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from thinc.api import Model
from thinc.model import deserialize_attr, serialize_attr

from ..errors import ConfigError

Number = Union[StrictInt, StrictFloat]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BiLMSettings(_Settings):
    """`spacy-elmo.BiLM.v1` and `.v2` (the precision is checked by `check_precision`, E104)."""

    max_batch_tokens: StrictInt = Field(ge=1)
    window_size: StrictInt = Field(ge=1)
    sentences: Literal["doc", "upstream"] = "doc"
    cuda_graphs: StrictBool = False
    frozen: StrictBool = False

    @model_validator(mode="after")
    def _one_window_fits(self) -> "BiLMSettings":
        if self.max_batch_tokens < self.window_size:
            raise ValueError(
                f"max_batch_tokens = {self.max_batch_tokens} is less than window_size = {self.window_size} "
                "(expected a batch budget that holds at least one full window)"
            )
        return self


class DropoutSettings(_Settings):
    """`spacy-elmo.ElmoListener.v1` and `spacy-elmo.ElmoStandalone.v1`."""

    dropout: Number = Field(ge=0.0, lt=1.0)


class ScalarMixSettings(_Settings):
    """`spacy-elmo.ScalarMix.v1` (a fixed `layer` is checked against the biLM at initialisation, E408)."""

    layer_norm: StrictBool
    layer_dropout: Number = Field(ge=0.0, lt=1.0)
    l2_to_uniform: Number = Field(ge=0.0)
    n_layers: Optional[StrictInt] = Field(None, ge=1)
    layer: Optional[StrictInt] = None
    average: StrictBool = False

    @field_validator("l2_to_uniform")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("expected a finite number >= 0")
        return value

    @model_validator(mode="after")
    def _one_fixed_mix(self) -> "ScalarMixSettings":
        if self.average and self.layer is not None:
            raise ValueError(f"layer = {self.layer} and average = true both fix the mix: set one of them")
        return self


class WindowsSettings(_Settings):
    """`spacy-elmo.windows.v1` (unset: the biLM's `window_size`, and a stride of the whole window)."""

    size: Optional[StrictInt] = Field(None, ge=1)
    stride: Optional[StrictInt] = Field(None, ge=1)

    @model_validator(mode="after")
    def _stride_within_the_window(self) -> "WindowsSettings":
        if self.size is not None and self.stride is not None and self.stride > self.size:
            raise ValueError(
                f"stride = {self.stride} is more than size = {self.size} (expected windows that overlap or "
                "touch: 1 <= stride <= size; a larger stride would skip tokens)"
            )
        return self


STORE_DTYPES = ("float32", "float16")


class ElmoSettings(_Settings):
    """The `elmo` component's settings (the factory's arguments); which
    `vector_mix` fits the biLM is checked once the biLM is known (E401)."""

    frozen: StrictBool = Field(description="true or false")
    store_dtype: Literal[STORE_DTYPES] = Field(description="'float32' or 'float16'")  # type: ignore[valid-type]
    vector_mix: Union[StrictStr, StrictInt, List[Union[StrictInt, StrictFloat]]] = Field(
        description="'average', 'top', a layer index or a list of finite layer weights"
    )
    set_vector_hooks: StrictBool = Field(description="true or false")
    train_cache_mb: StrictInt = Field(ge=0, description="a whole number of megabytes >= 0")

    @field_validator("vector_mix")
    @classmethod
    def _finite_weights(cls, value: Any) -> Any:
        if isinstance(value, list) and not all(math.isfinite(w) for w in value):
            raise ValueError("a weight is not finite")
        return value


def check_component_settings(values: Dict[str, Any], name: str) -> None:
    """The `elmo` component's settings, however it was built: E406 for a
    storage dtype that is not one, E508 naming the first other setting
    that is out of range, of the wrong type or unknown."""
    where = f"the settings of the '{name}' component ([components.{name}] in the config, or the call)"
    if values.get("store_dtype") not in STORE_DTYPES:
        raise ConfigError("E406", found=values.get("store_dtype"), extra=f" Found in {where}.")
    try:
        ElmoSettings.model_validate(values)
    except ValidationError as err:
        error = err.errors()[0]
        key = str(error["loc"][0])
        field = ElmoSettings.model_fields.get(key)
        expected = (
            field.description
            if field is not None
            else f"no such setting (the settings are {sorted(ElmoSettings.model_fields)})"
        )
        raise ConfigError("E508", key=key, found=values.get(key), expected=expected, where=where) from None


def check_settings(schema: Type[_Settings], values: Dict[str, Any], name: str, section: str) -> None:
    """Raise E411 listing every setting in `values` that `schema` rejects.

    name: the registered name, e.g. "spacy-elmo.BiLM.v1".
    section: where such settings usually are, e.g. "[components.elmo.model]".
    """
    try:
        schema.model_validate(values)
    except ValidationError as err:
        problems = [_explain(error) for error in err.errors()]
        raise ConfigError(
            "E411",
            where=f"'{name}'",
            n=len(problems),
            problems="; ".join(problems),
            section=section,
        ) from None


def _explain(error: Dict[str, Any]) -> str:
    """One pydantic error as "setting = found (expected ...)"."""
    if error.get("type") == "value_error" and not error.get("loc"):  # a check across settings
        return str(error.get("ctx", {}).get("error", error.get("msg", "")))
    expected = str(error.get("msg", "")).replace("Input should be", "expected", 1)
    if error.get("type") == "value_error":
        expected = str(error.get("ctx", {}).get("error", expected))
    setting = ".".join(str(part) for part in error.get("loc", ()))
    return f"{setting} = {error.get('input')!r} ({expected})"


# The attr of our models' runtime settings (a `ConfigSettings`).
SETTINGS = "settings"


class ConfigSettings(Mapping[str, Any]):
    """A model's runtime settings (those that do not change its weights), as
    its config gave them: kept in `model.attrs[SETTINGS]`, read-only.

    Thinc saves a model's attrs with its weights and, on loading, sets the
    saved values back over those the model was built with; for these that
    would make an override at `spacy.load` or an edit of the saved config.cfg
    say one thing while the model does another. These are saved (for the
    record) but never read back: loading keeps the values the config built
    the model with. Change one with `replace`.
    """

    def __init__(self, **values: Any) -> None:
        self._values = dict(values)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"ConfigSettings({self._values!r})"

    def replace(self, **changes: Any) -> "ConfigSettings":
        """A copy with `changes` made (settings are never changed in place)."""
        return ConfigSettings(**{**self._values, **changes})


@serialize_attr.register(ConfigSettings)
def _save_config_settings(_: ConfigSettings, value: ConfigSettings, name: str, model: Model) -> bytes:
    return srsly.msgpack_dumps(dict(value))


@deserialize_attr.register(ConfigSettings)
def _keep_config_settings(current: ConfigSettings, value: bytes, name: str, model: Model) -> ConfigSettings:
    return current  # the config's, not the saved ones (see ConfigSettings)
