"""The settings of our registered architectures and layers, checked in one place.

confection checks only the types of a registered function's arguments, so each
function checks its settings against a pydantic model here, whether it was
built from a config or called from Python: any setting of the wrong type or
out of range is one coded error (E411) that lists them all.
"""
import math
from typing import Any, Dict, Literal, Optional, Type, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import ElmoError, Errors

Number = Union[StrictInt, StrictFloat]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BiLMSettings(_Settings):
    """`spacy-elmo.BiLM.v1` (the precision is checked by `check_precision`, E104)."""

    max_batch_tokens: StrictInt = Field(ge=1)
    window_size: StrictInt = Field(ge=1)
    sentences: Literal["doc", "upstream"] = "doc"

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

    @field_validator("l2_to_uniform")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("expected a finite number >= 0")
        return value


def check_settings(schema: Type[_Settings], values: Dict[str, Any], name: str, section: str) -> None:
    """Raise E411 listing every setting in `values` that `schema` rejects.

    name: the registered name, e.g. "spacy-elmo.BiLM.v1".
    section: where such settings usually are, e.g. "[components.elmo.model]".
    """
    try:
        schema.model_validate(values)
    except ValidationError as err:
        problems = [_explain(error) for error in err.errors()]
        raise ElmoError("E411", Errors.E411.format(
            where=f"'{name}'", n=len(problems), problems="; ".join(problems), section=section,
        )) from None


def _explain(error: Dict[str, Any]) -> str:
    """One pydantic error as "setting = found (expected ...)"."""
    if error.get("type") == "value_error" and not error.get("loc"):  # a check across settings
        return str(error.get("ctx", {}).get("error", error.get("msg", "")))
    expected = str(error.get("msg", "")).replace("Input should be", "expected", 1)
    if error.get("type") == "value_error":
        expected = str(error.get("ctx", {}).get("error", expected))
    setting = ".".join(str(part) for part in error.get("loc", ()))
    return f"{setting} = {error.get('input')!r} ({expected})"
