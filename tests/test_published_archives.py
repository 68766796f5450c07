"""Published models that come as one zip (ELMoForManyLangs' 44 languages):
downloaded, checked and unpacked whole into the cache, unpacked again when the
archive changes, and never written outside the model's folder. Every download
comes from a server on 127.0.0.1."""

import io
import json
import zipfile

import pytest
import torch

from spacy_elmo import published_models
from spacy_elmo.bilm import BiLM, BiLMOptions, efml
from spacy_elmo.bilm.conversion import load_efml
from spacy_elmo.errors import DamagedFileError
from spacy_elmo.published_models import (
    CATALOGUE,
    EFML_LANGUAGES,
    UNPACKED,
    UNPACKED_STAMP,
    ModelFile,
    PublishedArchive,
    PublishedModel,
    fetch_model,
    model_dir,
    resolve_model,
)

from .bilm.efml_reference import build_efml_model, efml_importable
from .model_server import ModelServer, Route

ARCHIVE_PATH = "/repository/11/170.zip"
QUICK = dict(progress=False, retries=0, timeout=5.0)
# What fetch_model looks for in an unpacked archive; the bytes do not matter until a model loads.
STAND_IN = {
    "config.json": b'{"config_path": "cnn_50_100_512_4096_sample.json"}',
    "encoder.pkl": b"x",
    "token_embedder.pkl": b"x",
    "char.dic": b"a\t0\n",
    "word.dic": b"the\t0\n",
}


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPACY_ELMO_OFFLINE", raising=False)


@pytest.fixture
def server():
    with ModelServer() as server:
        yield server


def zipped(files: dict, top: str = "") -> bytes:
    """A zip of `files` ({name: bytes}), under the folder `top` when given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"{top}{name}", data)
    return buffer.getvalue()


def entry_for(server: ModelServer, body: bytes, name: str = "efml-xx") -> PublishedArchive:
    server.routes[ARCHIVE_PATH] = Route(body)
    return PublishedArchive(
        name=name,
        archive=ModelFile(server.url(ARCHIVE_PATH)),
        parameters=1,
        language="xx",
        licence="unstated",
        source=server.url("/"),
        trained_on="nothing",
    )


def fetch(entry, **options):
    return fetch_model(entry.name, catalogue={entry.name: entry}, **{**QUICK, **options})


@pytest.mark.parametrize("top", ["", "ru.model/"], ids=["at the top", "one folder down"])
def test_an_archive_is_unpacked_once_and_its_folder_given_as_the_model(server, top):
    entry = entry_for(server, zipped(STAND_IN, top))
    options, weights = fetch(entry)
    folder = model_dir(entry.name) / UNPACKED
    assert weights is None and options == (folder / top if top else folder)
    assert {path.name: path.read_bytes() for path in options.iterdir() if path.name in STAND_IN} == STAND_IN
    stamp = (folder / UNPACKED_STAMP).stat().st_mtime_ns
    # Loaded again: the archive's SHA-256 is checked, nothing is downloaded or unpacked again.
    assert fetch(entry, offline=True) == (options, None) and server.count(ARCHIVE_PATH) == 1
    assert (folder / UNPACKED_STAMP).stat().st_mtime_ns == stamp
    assert resolve_model(entry.name, catalogue={entry.name: entry}, **QUICK) == (options, None)


def test_a_folder_unpacked_from_another_archive_is_unpacked_again(server):
    entry = entry_for(server, zipped(STAND_IN))
    options, _ = fetch(entry)
    (options / "word.dic").write_bytes(b"changed\t0\n")
    (options / UNPACKED_STAMP).write_text("0" * 64)  # as a copy from another archive would be stamped
    assert fetch(entry, offline=True) == (options, None)
    assert (options / "word.dic").read_bytes() == STAND_IN["word.dic"]


@pytest.mark.parametrize("member", ["../outside.txt", "/absolute.txt", "model/../../outside.txt"])
def test_a_member_that_would_land_outside_the_folder_is_e711_and_nothing_is_unpacked(server, member, tmp_path):
    entry = entry_for(server, zipped({**STAND_IN, member: b"no"}))
    with pytest.raises(DamagedFileError) as err:
        fetch(entry)
    assert err.value.code == "E711" and member in str(err.value) and "download" in str(err.value)
    folder = model_dir(entry.name)
    assert not (folder / UNPACKED).exists() and not list(folder.glob(".unpacking-*"))
    assert not list(tmp_path.rglob("outside.txt")) and not list(tmp_path.rglob("absolute.txt"))


def test_a_link_in_the_archive_is_e711(server):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in STAND_IN.items():
            archive.writestr(name, data)
        link = zipfile.ZipInfo("word.vectors")
        link.external_attr = 0o120777 << 16  # a symbolic link to /etc/passwd
        archive.writestr(link, "/etc/passwd")
    with pytest.raises(DamagedFileError) as err:
        fetch(entry_for(server, buffer.getvalue()))
    assert err.value.code == "E711" and "is a link" in str(err.value)


def test_an_archive_that_is_no_zip_or_holds_no_model_is_e711(server):
    with pytest.raises(DamagedFileError) as err:
        fetch(entry_for(server, b"<html>not found</html>", name="efml-aa"))
    assert err.value.code == "E711" and "efml-aa" in str(err.value)
    with pytest.raises(DamagedFileError) as err:
        fetch(entry_for(server, zipped({"readme.txt": b"hello"}), name="efml-bb"))
    assert err.value.code == "E711" and "holds no ELMoForManyLangs model folder" in str(err.value)
    assert not (model_dir("efml-bb") / UNPACKED).exists()


def test_the_catalogue_lists_elmoformanylangs_44_languages_from_the_nlpl_repository():
    archives = [model for model in CATALOGUE.values() if isinstance(model, PublishedArchive)]
    assert len(archives) == len(EFML_LANGUAGES) == 44
    assert sorted(model.archive.url.rsplit("/", 1)[1] for model in archives) == [f"{n}.zip" for n in range(136, 180)]
    for model in archives:
        assert model.name == f"efml-{model.language}"
        assert model.archive.url == f"http://vectors.nlpl.eu/repository/11/{EFML_LANGUAGES[model.language]}.zip"
    assert CATALOGUE["efml-ru"].archive.url.endswith("/170.zip") and CATALOGUE["efml-en"].archive.url.endswith(
        "/144.zip"
    )
    # Their weights apart from the tables: the shipped architecture's count, whatever the tables' sizes.
    for n_chars, n_words in ((9, 5), (300, 2000)):
        chars = list(efml.CHAR_MARKS.values()) + [chr(0x400 + i) for i in range(n_chars)]
        words = list(efml.WORD_MARKS.values()) + [f"w{i}" for i in range(n_words)]
        options = BiLMOptions.from_allennlp(efml._options_dict(efml.SHIPPED_ARCHITECTURE, chars, words))
        tables = len(chars) * 50 + len(words) * 100
        assert options.n_parameters - tables == published_models.EFML_PARAMETERS
    assert all(isinstance(model, (PublishedModel, PublishedArchive)) for model in CATALOGUE.values())


def test_an_elmoformanylangs_zip_by_name_loads_as_its_folder_does(server, tmp_path):
    with efml_importable(tmp_path / "site"):
        folder = build_efml_model(tmp_path / "efml")
    files = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    entry = entry_for(server, zipped(files, top="xx.model/"))
    options, weights = resolve_model(entry.name, catalogue={entry.name: entry}, **QUICK)
    assert (options.name, weights) == ("xx.model", None)
    sentences = [["the", "cat", "sat"], ["über", "中文", "zzz", "straße"]]
    with torch.no_grad():
        assert torch.equal(
            BiLM.from_allennlp(options).encode_words(sentences), load_efml(folder).encode_words(sentences)
        )
    record = json.loads((model_dir(entry.name) / published_models.RECORD).read_text())
    assert list(record["files"]) == ["170.zip"]


def test_an_unpacked_archive_is_found_by_the_files_the_loader_takes_for_a_model(tmp_path):
    for n, names in enumerate((published_models.EFML_MARKS, ("config.json",), ("encoder.pkl",))):
        folder = tmp_path / str(n)
        folder.mkdir()
        for name in names:
            (folder / name).write_bytes(b"x")
        assert efml.is_efml_folder(folder) == (names == published_models.EFML_MARKS)
