"""`download NAME` and `models`: a published model fetched by name into the
cache, and the catalogue listed with what is cached and where; `spacy elmo`
runs the same commands. Downloads come from a server on 127.0.0.1."""

import pytest
from typer.testing import CliRunner

from spacy_elmo import published_models
from spacy_elmo.cli import app

from ..model_server import OPTIONS_PATH, WEIGHTS_PATH, ModelServer, Route, tiny_entry, tiny_model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny")
    tiny_model(directory)
    return (directory / "options.json").read_bytes(), (directory / "weights.hdf5").read_bytes()


@pytest.fixture
def server(files, monkeypatch, tmp_path):
    """Serves the tiny biLM, the only model in the catalogue; a cache of the test's own."""
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPACY_ELMO_OFFLINE", raising=False)
    with ModelServer() as server:
        server.routes[OPTIONS_PATH], server.routes[WEIGHTS_PATH] = Route(files[0]), Route(files[1])
        monkeypatch.setattr(published_models, "CATALOGUE", {"tiny": tiny_entry(server)})
        yield server


def row_of(output: str, name: str) -> list:
    return next(line.split() for line in output.splitlines() if line.split()[:1] == [name])


def test_download_then_models_shows_the_model_cached_and_where(server, files, tmp_path):
    result = CliRunner().invoke(app, ["models"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert row_of(result.output, "tiny")[-2:] == ["no", "-"]
    assert "recorded at its first download and checked at every later load" in " ".join(result.output.split())
    assert str(tmp_path / "cache") in result.output

    result = CliRunner().invoke(app, ["download", "tiny", "--no-progress"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "cache" / "tiny"
    assert str(folder) in result.output and "elmo_tiny_weights.hdf5" in result.output
    assert (folder / "elmo_tiny_weights.hdf5").read_bytes() == files[1]

    result = CliRunner().invoke(app, ["models"], terminal_width=200)
    assert result.exit_code == 0, result.output
    row = row_of(result.output, "tiny")
    assert row[-2:] == ["yes", str(folder)] and row[1:6] == ["0", "MB", "(0.0M", "weights)", "en"]


def test_download_draws_a_progress_bar(server):
    result = CliRunner().invoke(app, ["download", "tiny"])
    assert result.exit_code == 0, result.output
    assert "100%" in result.stderr


def test_a_failed_download_exits_1_with_the_coded_error(server):
    del server.routes[WEIGHTS_PATH]
    result = CliRunner().invoke(app, ["download", "tiny", "--no-progress", "--retries", "0"])
    assert result.exit_code == 1 and "[E703]" in result.output and "404" in result.output


def test_an_unknown_name_exits_1_with_e701(server):
    result = CliRunner().invoke(app, ["download", "tinny"])
    assert result.exit_code == 1 and "[E701]" in result.output and "tiny" in result.output


def test_spacy_elmo_runs_the_same_commands(monkeypatch, tmp_path):
    from spacy.cli._util import app as spacy_app

    import spacy_elmo.cli.on_spacy  # noqa: F401  (what spaCy's entry point imports)

    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path))
    result = CliRunner().invoke(spacy_app, ["elmo", "models"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name, model in published_models.CATALOGUE.items():
        if isinstance(model, published_models.PublishedArchive):
            assert row_of(result.output, name)[1:] == [
                f">{model.size_mb:,.0f}",
                "MB",
                "(94.1M",
                "weights",
                "+",
                "tables)",
                model.language,
                "unstated",
                "no",
                "-",
            ]
        else:
            assert row_of(result.output, name)[1:] == [
                f"{model.size_mb:,.0f}",
                "MB",
                f"({model.parameters / 1e6:.1f}M",
                "weights)",
                "en",
                "Apache-2.0",
                "no",
                "-",
            ]
    result = CliRunner().invoke(spacy_app, ["elmo", "download", "--help"])
    assert result.exit_code == 0 and "SPACY_ELMO_CACHE" in result.output


def test_models_lists_the_shipped_model_first_with_its_folder(server):
    from spacy_elmo.shipped_models import pretrained_dir

    result = CliRunner().invoke(app, ["models"], terminal_width=200)
    assert result.exit_code == 0, result.output
    row = row_of(result.output, "elmo-en-small")
    assert row[1:] == ["15", "MB", "en", "MIT", "shipped", str(pretrained_dir() / "elmo-en-small")]
    assert result.output.index("elmo-en-small") < result.output.index("tiny")


def test_download_of_an_archive_names_the_folder_it_unpacked_to(server, monkeypatch, tmp_path):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in ("config.json", "encoder.pkl", "token_embedder.pkl", "char.dic", "word.dic"):
            archive.writestr(f"xx.model/{name}", b"{}")
    server.routes["/repository/11/999.zip"] = Route(buffer.getvalue())
    entry = published_models.PublishedArchive(
        name="efml-xx",
        archive=published_models.ModelFile(server.url("/repository/11/999.zip")),
        parameters=1,
        language="xx",
        licence="unstated",
        source=server.url("/"),
        trained_on="nothing",
    )
    monkeypatch.setattr(published_models, "CATALOGUE", {"efml-xx": entry})
    result = CliRunner().invoke(app, ["download", "efml-xx", "--no-progress"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "cache" / "efml-xx" / published_models.UNPACKED / "xx.model"
    assert str(folder) in result.output and "encoder.pkl" in result.output
    assert (folder / "config.json").read_bytes() == b"{}"
