"""docs/configs.md, written from the code: every registered function of the
package and of pretraining, and every setting with its default.

    PYTHONPATH=. python -m tests.docs.configs_reference > docs/configs.md

`test_configs_reference.py` fails when the page and the code differ.
"""

import configparser
import importlib
import inspect
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]

# The `elmo` factory's settings, in the words of its docstring's style (the
# factory itself documents them nowhere else); the test checks that this names
# exactly the factory's settings.
ELMO_SETTINGS = {
    "model": "the biLM, a `spacy-elmo.BiLM.v1` (below)",
    "frozen": "no gradients to the biLM, and its outputs cached across epochs; false: the listeners' gradients "
    "fine-tune it",
    "store_dtype": 'the dtype of `doc._.elmo`: "float32" or "float16" (half the memory)',
    "vector_mix": 'the fixed mix of `token/span/doc._.elmo_vector`: "average", "top", a layer index or one '
    "weight per layer",
    "set_vector_hooks": "`.vector` and `.similarity()` of tokens, spans and docs use `elmo_vector`",
    "train_cache_mb": "the most memory the training cache of the frozen biLM's outputs takes; 0: no cache",
}
_REGISTRIES = {"spacy_architectures": "architectures", "thinc_layers": "layers", "spacy_misc": "misc"}


def _entry_points() -> Iterator[Tuple[str, str, str]]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    for group, block in parser["options.entry_points"].items():
        for line in block.strip().splitlines():
            name, target = (part.strip() for part in line.split("=", 1))
            yield group, name, target


def _load(target: str) -> Any:
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def _param_docs(func: Any) -> Dict[str, str]:
    """``name: description`` paragraphs of a docstring, joined into one line each."""
    docs, current = {}, None
    for line in inspect.cleandoc(func.__doc__ or "").splitlines():
        match = re.match(r"^(\w+): (.*)$", line)
        if match:
            current = match[1]
            docs[current] = match[2].strip()
        elif current and line.startswith("    "):
            docs[current] += " " + line.strip()
        else:
            current = None
    return docs


def _summary(func: Any) -> str:
    return " ".join(inspect.cleandoc(func.__doc__ or "").split("\n\n")[0].split())


def _default(param: inspect.Parameter) -> str:
    if param.default is inspect.Parameter.empty:
        return "required"
    return f"`{param.default!r}`" if param.default is not None else "`None`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _function_table(func: Any, skip: Tuple[str, ...] = (), earlier: Optional[Dict[str, str]] = None) -> List[str]:
    """earlier: the settings' descriptions of the version before (a `.v2`
    describes what it adds, the rest is described on the `.v1`)."""
    docs = {**(earlier or {}), **_param_docs(func)}
    params = [p for p in inspect.signature(func).parameters.values() if p.name not in skip]
    if not params:
        return ["No settings."]
    rows = ["| setting | default | what it does |", "| --- | --- | --- |"]
    rows += [f"| `{p.name}` | {_default(p)} | {_cell(docs.get(p.name, ''))} |" for p in params]
    return rows


def _field_comments(cls: Any) -> Dict[str, str]:
    """Each field's comment in the class's source: on its line, or the lines just above it."""
    comments, above = {}, []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("# "))
            continue
        match = re.match(r"^(\w+): [^=]+=.*?(?:#\s*(.*))?$", stripped)
        if match:
            comments[match[1]] = " ".join([*above, match[2] or ""]).strip()
        above = []
    return comments


def _section_rows(cls: Any, prefix: str = "") -> Iterator[str]:
    from pydantic import BaseModel

    comments = _field_comments(cls)
    for name, field in cls.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            continue
        key = field.alias or name
        default = field.get_default(call_default_factory=True)
        yield f"| `{prefix}{key}` | `{default!r}` | {_cell(comments.get(name, ''))} |"


def render() -> str:
    from spacy.language import Language

    import spacy_elmo.models  # noqa: F401  (registers the architectures)
    from spacy_elmo.pipeline.elmo import Elmo
    from spacy_elmo.training.registry import OPTIMIZERS, SCHEDULES, SOFTMAXES, TOKENIZERS, registry
    from spacy_elmo.training.run.config import PARTS, PretrainConfig

    out = [
        "# Configuration reference",
        "",
        "<!-- Written by `python -m tests.docs.configs_reference > docs/configs.md`; "
        "tests/docs/test_configs_reference.py checks it against the code. -->",
        "",
        "Every registered function of spacy-elmo and every setting, with its default, as the code has",
        "them. A registered name never changes once released: a changed function is registered beside",
        "it as `.v2`.",
        "",
        "## The `elmo` component",
        "",
        "```ini",
        "[components.elmo]",
        'factory = "elmo"',
        "```",
        "",
        "| setting | default | what it does |",
        "| --- | --- | --- |",
    ]
    defaults = Language.get_factory_meta("elmo").default_config
    for key, value in defaults.items():
        shown = f'`@architectures = "{value["@architectures"]}"`' if isinstance(value, dict) else f"`{value!r}`"
        out.append(f"| `{key}` | {shown} | {_cell(ELMO_SETTINGS[key])} |")
    out += ["", "Its weights are settings of `[initialize.components.elmo]`:", ""]
    out += _function_table(Elmo.initialize, skip=("self", "get_examples", "nlp"))
    for group, title in (
        ("spacy_architectures", "Architectures (`@architectures`)"),
        ("thinc_layers", "Layers (`@layers`)"),
        ("spacy_misc", "Segmenters (`@misc`)"),
    ):
        out += ["", f"## {title}"]
        described: Dict[str, Dict[str, str]] = {}
        for kind, name, target in _entry_points():
            if kind != group:
                continue
            func = _load(target)
            earlier = described.get(re.sub(r"\.v(\d+)$", lambda m: f".v{int(m[1]) - 1}", name), {})
            described[name] = {**earlier, **_param_docs(func)}
            out += ["", f"### `{name}`", "", _summary(func), ""]
            out += _function_table(func, earlier=earlier)
    out += [
        "",
        "## The pretraining config (`python -m spacy_elmo pretrain CONFIG`)",
        "",
        "A spaCy-style `.cfg` file; a setting left out takes its default. Override any with",
        "`--section.key value`.",
        "",
    ]
    for section_name, field in PretrainConfig.model_fields.items():
        section = field.annotation
        out += [f"### `[{section_name}]`", "", "| setting | default | what it does |", "| --- | --- | --- |"]
        out += list(_section_rows(section))
        for sub_name, sub in section.model_fields.items():
            if hasattr(sub.annotation, "model_fields"):
                out += [
                    "",
                    f"### `[{section_name}.{sub_name}]`",
                    "",
                    "| setting | default | what it does |",
                    "| --- | --- | --- |",
                ]
                out += list(_section_rows(sub.annotation))
        out.append("")
    keys = {part.registry: part.key for part in PARTS}
    out += [
        "## Pretraining's registered functions",
        "",
        "A section names its function by its key; its other settings are the function's arguments.",
        "",
    ]
    for kind, where in (
        (SOFTMAXES, "[softmax]"),
        (OPTIMIZERS, "[training.optimizer]"),
        (SCHEDULES, "[training.schedule]"),
        (TOKENIZERS, "[corpus] tokenizer"),
    ):
        key = keys.get(kind)
        out.append(f"### `{kind}`: {where}" + (f' `{key} = "…"`' if key else " (or a spaCy pipeline's name)"))
        for name in getattr(registry, kind).get_all():
            func = getattr(registry, kind).get(name)
            summary = _summary(func)
            out += ["", f"#### `{name}`", "", *([summary, ""] if summary else []), *_function_table(func)]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
