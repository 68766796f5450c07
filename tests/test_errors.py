"""The coded errors: one class per kind of fault, each code raised through
exactly one of them, "[Exxx]" once at the front of every message, and errors
that survive pickling (as between processes)."""

import pickle
import re
import string
import threading
from pathlib import Path

import pytest

from spacy_elmo.bilm import batch_to_ids
from spacy_elmo.bilm.options import BiLMOptions
from spacy_elmo.errors import (
    ConfigError,
    DamagedFileError,
    DivergedRunError,
    DownloadError,
    ElmoError,
    Errors,
    InputError,
    OutputError,
)

CLASSES = (ElmoError, InputError, ConfigError, DamagedFileError, OutputError, DivergedRunError, DownloadError)
CODES = sorted(name for name in vars(Errors) if re.fullmatch(r"E\d{3}", name))
# E313 is the title of confection's ConfigValidationError, raised as such so
# that spaCy's show_validation_error prints its table of settings.
NOT_AN_ELMO_ERROR = {"E313"}
ROOT = Path(__file__).parent.parent
SOURCES = [*sorted((ROOT / "spacy_elmo").rglob("*.py")), *sorted((ROOT / "experiments").rglob("*.py"))]
CONSTRUCTED = re.compile(r"\b(\w+Error)\(\s*\"(E\d{3})\"")


def raise_sites():
    """(class name, code, file) for every coded error the code constructs."""
    for path in SOURCES:
        for match in CONSTRUCTED.finditer(path.read_text(encoding="utf8")):
            yield match.group(1), match.group(2), path.relative_to(ROOT)


def fields_of(code):
    """The message's fields, each with its format spec ("," for thousands)."""
    return {name: spec for _, name, spec, _ in string.Formatter().parse(getattr(Errors, code)) if name}


def example(cls, code, value=lambda name: f"<{name}>"):
    """An error of class `cls` with each field `value(name)` (a number where the field's format needs one)."""
    return cls(code, **{name: 1 if spec else value(name) for name, spec in fields_of(code).items()})


def test_every_code_belongs_to_exactly_one_class():
    owners = {code: [cls.__name__ for cls in CLASSES if code in cls.codes] for code in CODES}
    assert {code: names for code, names in owners.items() if len(names) != 1} == {
        code: [] for code in NOT_AN_ELMO_ERROR
    }
    assert set().union(*(cls.codes for cls in CLASSES)) <= set(CODES)  # no class lists a code Errors lacks


def test_every_code_is_raised_through_its_class_and_only_there():
    sites = list(raise_sites())
    classes = {cls.__name__: cls for cls in CLASSES}
    wrong = [
        (name, code, str(path)) for name, code, path in sites if name not in classes or code not in classes[name].codes
    ]
    assert wrong == []
    raised = {(name, code) for name, code, _ in sites}
    unraised = [
        (cls.__name__, code) for cls in CLASSES for code in sorted(cls.codes) if (cls.__name__, code) not in raised
    ]
    assert unraised == []


def test_each_raise_site_names_its_code_once():
    # The class formats the message; a site that also formats it names the code twice.
    twice = [
        str(path.relative_to(ROOT))
        for path in SOURCES
        for _ in re.finditer(r"Errors\.E\d{3}", path.read_text(encoding="utf8"))
        if path.name != "errors.py"
    ]
    assert twice == ["spacy_elmo/training/run/config.py"]  # E313's title for confection's error


@pytest.mark.parametrize("code", CODES)
def test_every_message_starts_with_its_code_once(code):
    assert getattr(Errors, code).startswith(f"[{code}] ")
    assert getattr(Errors, code).count(f"[{code}]") == 1
    if code not in NOT_AN_ELMO_ERROR:
        cls = next(cls for cls in CLASSES if code in cls.codes)
        err = example(cls, code)
        assert err.code == code and str(err).startswith(f"[{code}] ") and str(err).count(f"[{code}]") == 1


def test_an_error_is_caught_by_its_type_and_as_an_elmo_error():
    with pytest.raises(InputError) as err:
        batch_to_ids(["not", "a list of token lists"])
    assert err.value.code == "E103" and isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    assert not isinstance(err.value, (ConfigError, DamagedFileError, OutputError, DivergedRunError))
    try:
        BiLMOptions.from_allennlp({"char_cnn": {}}, "broken/options.json")
    except DamagedFileError as caught:
        assert caught.code == "E002" and "broken/options.json" in str(caught)
    else:
        pytest.fail("a damaged options file raised nothing")


def test_text_after_the_message_is_no_template_field():
    assert all("extra" not in fields_of(code) for code in CODES)
    err = OutputError("E202", path="out.json", extra=" To replace it, pass --overwrite.")
    assert str(err) == Errors.E202.format(path="out.json") + " To replace it, pass --overwrite."


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_an_error_pickles_with_its_class_code_and_message(cls):
    code = sorted(cls.codes)[0]
    err = example(cls, code, value=lambda name: threading.Lock())  # the fields need not pickle
    err.add_note("a note")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and back.code == code and str(back) == str(err) and back.args == err.args
    assert back.__notes__ == ["a note"]
