"""Published models by name: downloaded whole into the cache or not at all,
checked against the SHA-256 recorded at the first download, one copy when two
processes fetch at once, and a coded error that says where to put the files
when there is no network. Every download comes from a server on 127.0.0.1."""

import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from spacy_elmo import published_models
from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.errors import ConfigError, DamagedFileError, DownloadError, InputError
from spacy_elmo.published_models import (
    CATALOGUE,
    RECORD,
    ModelFile,
    PublishedModel,
    cache_dir,
    fetch_model,
    is_cached,
    model_dir,
    resolve_model,
)

from .model_server import OPTIONS_PATH, WEIGHTS_PATH, ModelServer, Route, closed_port, tiny_entry, tiny_model

SENTENCES = [["The", "cat", "sat", "."], ["Hello", "world", "!"]]
QUICK = dict(progress=False, retries=0, timeout=5.0)


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """The tiny biLM, and the bytes of its two files."""
    directory = tmp_path_factory.mktemp("tiny")
    model = tiny_model(directory)
    return model, (directory / "options.json").read_bytes(), (directory / "weights.hdf5").read_bytes()


@pytest.fixture
def server(original):
    _, options, weights = original
    with ModelServer() as server:
        server.routes[OPTIONS_PATH] = Route(options)
        server.routes[WEIGHTS_PATH] = Route(weights)
        yield server


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    """Each test has a cache of its own, and downloads on."""
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPACY_ELMO_OFFLINE", raising=False)


def fetch(entry, **options):
    return fetch_model(entry.name, catalogue={entry.name: entry}, **{**QUICK, **options})


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def nothing_kept(entry) -> bool:
    """The model's folder holds no file of the model, no record and no temporary (the lock file may stay)."""
    folder = model_dir(entry.name)
    return not folder.exists() or sorted(p.name for p in folder.iterdir()) in ([], [published_models.LOCK])


def layers(model):
    with torch.no_grad():
        return model(batch_to_ids(SENTENCES)).layers


def test_a_good_fetch_loads_and_gives_the_layers_of_the_original(server, original):
    model, options, weights = original
    entry = tiny_entry(server)
    paths = fetch(entry)
    assert paths.options.parent == paths.weights.parent == cache_dir() / "tiny"
    assert (paths.options.name, paths.weights.name) == ("elmo_tiny_options.json", "elmo_tiny_weights.hdf5")
    assert paths.options.read_bytes() == options and paths.weights.read_bytes() == weights
    loaded = BiLM.from_allennlp(*paths).eval()
    assert torch.equal(layers(loaded), layers(model))
    # The next fetch finds the model in the cache and asks the server for nothing.
    assert fetch(entry) == paths and server.count(OPTIONS_PATH) == server.count(WEIGHTS_PATH) == 1


def test_the_sha256_is_recorded_at_first_download_and_a_changed_file_is_refused(server, original):
    _, options, weights = original
    entry = tiny_entry(server)
    paths = fetch(entry)
    record = json.loads((paths.options.parent / RECORD).read_text())
    assert record["files"][paths.weights.name] == {
        "url": entry.weights.url,
        "size": len(weights),
        "sha256": sha256(weights),
    }
    assert record["files"][paths.options.name]["sha256"] == sha256(options)
    changed = bytearray(weights)
    changed[-1] ^= 1
    paths.weights.write_bytes(bytes(changed))
    with pytest.raises(DamagedFileError) as err:
        fetch(entry)
    assert err.value.code == "E705" and "SHA-256" in str(err.value) and str(paths.weights) in str(err.value)
    assert sha256(weights) in str(err.value) and str(paths.options.parent) in str(err.value)
    assert paths.weights.read_bytes() == bytes(changed)  # left as it is
    assert server.count(WEIGHTS_PATH) == 1


def test_a_missing_file_on_the_server_is_e703_and_nothing_is_kept(server):
    del server.routes[WEIGHTS_PATH]
    entry = tiny_entry(server)
    with pytest.raises(DownloadError) as err:
        fetch(entry)
    message = str(err.value)
    assert err.value.code == "E703" and "404" in message and entry.weights.url in message
    assert str(model_dir("tiny")) in message and "elmo_tiny_options.json" in message
    assert nothing_kept(entry)  # the options file, downloaded first, went too
    assert not is_cached("tiny", catalogue={"tiny": entry})


def test_a_download_unlike_the_listed_sha256_is_e704_and_nothing_is_kept(server):
    entry = tiny_entry(server, weights_sha256="0" * 64)
    with pytest.raises(DownloadError) as err:
        fetch(entry)
    assert err.value.code == "E704" and "SHA-256" in str(err.value) and "0" * 64 in str(err.value)
    assert nothing_kept(entry)


def test_a_truncated_body_is_refused_by_the_listed_size(server, original):
    _, _, weights = original
    server.routes[WEIGHTS_PATH] = Route(weights[: len(weights) // 2])  # a whole answer, of half the file
    entry = tiny_entry(server, weights_size=len(weights))
    with pytest.raises(DownloadError) as err:
        fetch(entry)
    assert err.value.code == "E704" and "size in bytes" in str(err.value) and f"{len(weights)}" in str(err.value)
    assert nothing_kept(entry)


def test_a_connection_dropped_halfway_is_e703_and_nothing_is_kept(server, original):
    server.routes[WEIGHTS_PATH].cut_first = 99
    entry = tiny_entry(server)
    with pytest.raises(DownloadError) as err:
        fetch(entry)
    assert err.value.code == "E703" and "closed before the whole file came" in str(err.value)
    assert nothing_kept(entry)


def test_a_dropped_download_starts_again_and_the_second_try_is_kept(server, original):
    _, _, weights = original
    server.routes[WEIGHTS_PATH].cut_first = 1
    paths = fetch(tiny_entry(server), retries=1)
    assert paths.weights.read_bytes() == weights and server.count(WEIGHTS_PATH) == 2


def test_a_slow_server_within_the_timeout_is_waited_for(server, original):
    _, _, weights = original
    server.routes[WEIGHTS_PATH].pieces, server.routes[WEIGHTS_PATH].pause = 6, 0.1
    paths = fetch(tiny_entry(server), timeout=2.0)
    assert paths.weights.read_bytes() == weights


def test_a_server_that_stalls_past_the_timeout_is_e703_and_nothing_is_kept(server):
    server.routes[WEIGHTS_PATH].pieces, server.routes[WEIGHTS_PATH].pause = 2, 3.0
    entry = tiny_entry(server)
    with pytest.raises(DownloadError) as err:
        fetch(entry, timeout=0.3)
    assert err.value.code == "E703" and "nothing for 0.3 s (the timeout)" in str(err.value)
    assert nothing_kept(entry)


def assert_says_where_to_put_the_files(message: str, entry) -> None:
    """The message names both URLs, both file names and the model's folder in the cache."""
    for text in (entry.options.url, entry.weights.url, entry.options.name, entry.weights.name, str(model_dir("tiny"))):
        assert text in message


def test_no_network_is_e703_naming_the_urls_the_files_and_the_folder(server):
    entry = replace(tiny_entry(server), options=ModelFile(f"http://127.0.0.1:{closed_port()}{OPTIONS_PATH}"))
    with pytest.raises(DownloadError) as err:
        fetch(entry)
    message = str(err.value)
    assert err.value.code == "E703" and "no connection to the server" in message
    assert_says_where_to_put_the_files(message, entry)
    assert nothing_kept(entry)


def test_offline_nothing_is_downloaded_and_the_error_says_where_to_put_the_files(server, original, monkeypatch):
    _, options, weights = original
    entry = tiny_entry(server)
    monkeypatch.setenv("SPACY_ELMO_OFFLINE", "1")
    with pytest.raises(DownloadError) as err:
        fetch(entry)
    message = str(err.value)
    assert err.value.code == "E702" and "SPACY_ELMO_OFFLINE=1" in message
    assert_says_where_to_put_the_files(message, entry)
    assert server.count(OPTIONS_PATH) == server.count(WEIGHTS_PATH) == 0
    # Files put there by hand load offline; their SHA-256 is recorded at first use.
    folder = model_dir("tiny")
    folder.mkdir(parents=True)
    (folder / entry.options.name).write_bytes(options)
    (folder / entry.weights.name).write_bytes(weights)
    paths = fetch(entry)
    record = json.loads((folder / RECORD).read_text())
    assert record["files"][entry.weights.name]["sha256"] == sha256(weights) and paths.weights.parent == folder
    assert server.count(OPTIONS_PATH) == server.count(WEIGHTS_PATH) == 0
    assert fetch(entry, offline=False) == paths and server.count(WEIGHTS_PATH) == 0


def test_a_file_put_there_by_hand_unlike_the_listed_sha256_is_refused(server, original):
    _, options, weights = original
    entry = tiny_entry(server, weights_sha256=sha256(weights))
    folder = model_dir("tiny")
    folder.mkdir(parents=True)
    (folder / entry.options.name).write_bytes(options)
    (folder / entry.weights.name).write_bytes(weights[:-1])
    with pytest.raises(DamagedFileError) as err:
        fetch(entry)
    assert err.value.code == "E705" and "the file the catalogue lists" in str(err.value)
    assert (folder / entry.weights.name).read_bytes() == weights[:-1] and not (folder / RECORD).exists()


def test_two_processes_fetching_at_once_download_once_and_both_get_the_files(server, original, tmp_path):
    _, options, weights = original
    for path in (OPTIONS_PATH, WEIGHTS_PATH):
        server.routes[path].pieces, server.routes[path].pause = 8, 0.1
    entry = tiny_entry(server)
    script = (
        "import json, sys\n"
        "from spacy_elmo.published_models import ModelFile, PublishedModel, fetch_model\n"
        "entry = json.loads(sys.argv[1])\n"
        "entry['options'], entry['weights'] = ModelFile(**entry['options']), ModelFile(**entry['weights'])\n"
        "paths = fetch_model(entry['name'], catalogue={entry['name']: PublishedModel(**entry)}, progress=False,"
        " retries=0, timeout=10)\n"
        "print(json.dumps([str(path) for path in paths]))\n"
    )
    argument = json.dumps({**vars(entry), "options": vars(entry.options), "weights": vars(entry.weights)})
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, argument], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err[-2000:] for _, err in results]
    found = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    assert found[0] == found[1]
    assert Path(found[0][0]).read_bytes() == options and Path(found[0][1]).read_bytes() == weights
    assert server.count(OPTIONS_PATH) == server.count(WEIGHTS_PATH) == 1
    assert sorted(p.name for p in model_dir("tiny").iterdir() if p.name != published_models.LOCK) == sorted(
        [RECORD, entry.options.name, entry.weights.name]
    )


def test_a_temporary_left_by_a_killed_download_is_removed_by_the_next(server):
    folder = model_dir("tiny")
    folder.mkdir(parents=True)
    (folder / "tmpab_c1234").write_bytes(b"half a file")
    fetch(tiny_entry(server))
    assert not (folder / "tmpab_c1234").exists()


def test_a_damaged_record_is_e706(server):
    entry = tiny_entry(server)
    paths = fetch(entry)
    (paths.options.parent / RECORD).write_text("{not json")
    with pytest.raises(DamagedFileError) as err:
        fetch(entry)
    assert err.value.code == "E706" and RECORD in str(err.value)


def test_resolve_model_fetches_a_name_and_leaves_paths_alone(server, tmp_path):
    entry = tiny_entry(server)
    catalogue = {entry.name: entry}
    assert resolve_model("tiny", catalogue=catalogue, **QUICK) == tuple(fetch(entry))
    assert resolve_model(tmp_path, catalogue=catalogue) == (tmp_path, None)
    assert resolve_model(str(tmp_path), catalogue=catalogue) == (tmp_path, None)
    assert resolve_model(tmp_path / "nowhere", catalogue=catalogue) == (tmp_path / "nowhere", None)
    with pytest.raises(InputError) as err:
        resolve_model("tinny", catalogue=catalogue)
    assert err.value.code == "E709" and "tiny" in str(err.value)
    with pytest.raises(InputError) as err:
        fetch_model("tinny", catalogue=catalogue)
    assert err.value.code == "E701" and "tiny" in str(err.value)


def test_the_cache_folder_follows_spacy_elmo_cache(monkeypatch, tmp_path):
    import platformdirs

    assert cache_dir() == tmp_path / "cache"
    monkeypatch.setenv("SPACY_ELMO_CACHE", "")
    assert cache_dir() == Path(platformdirs.user_cache_dir("spacy-elmo"))
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "a file"))
    with pytest.raises(ConfigError) as err:
        fetch_model("allennlp-elmo-small", **QUICK)
    assert err.value.code == "E708" and "SPACY_ELMO_CACHE" in str(err.value) and "is a file" in str(err.value)


def test_an_unknown_offline_value_is_e707(monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_OFFLINE", "maybe")
    with pytest.raises(ConfigError) as err:
        fetch_model("allennlp-elmo-small", **QUICK)
    assert err.value.code == "E707" and "'maybe'" in str(err.value)


def test_the_catalogue_lists_allennlps_four_english_models():
    allennlp = {name: model for name, model in CATALOGUE.items() if isinstance(model, PublishedModel)}
    assert sorted(allennlp) == [
        "allennlp-elmo-medium",
        "allennlp-elmo-original",
        "allennlp-elmo-original-5.5b",
        "allennlp-elmo-small",
    ]
    for model in allennlp.values():
        folder = model.weights.url.split("/")[-2]
        assert model.options.url == f"https://allennlp.s3.amazonaws.com/models/elmo/{folder}/elmo_{folder}_options.json"
        assert model.weights.url == model.options.url.replace("_options.json", "_weights.hdf5")
        assert (model.language, model.licence) == ("en", "Apache-2.0")
    # The sizes: the weights each model's options describe, which round to AllenNLP's published counts.
    from spacy_elmo.bilm import BiLMOptions

    shapes = {
        "allennlp-elmo-small": (1024, 128, 1),
        "allennlp-elmo-medium": (2048, 256, 1),
        "allennlp-elmo-original": (4096, 512, 2),
        "allennlp-elmo-original-5.5b": (4096, 512, 2),
    }
    for name, (cell, projection, highway) in shapes.items():
        options = BiLMOptions(lstm_dim=cell, projection_dim=projection, n_highway=highway)
        assert CATALOGUE[name].parameters == options.n_parameters
    assert [round(CATALOGUE[name].parameters / 1e6, 1) for name in shapes] == [13.6, 28.0, 93.6, 93.6]
