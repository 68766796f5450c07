"""``python -m spacy_elmo download NAME`` and ``python -m spacy_elmo models``:
the published ELMo models, fetched by name into the cache.

The catalogue and the cache live in `spacy_elmo.published_models`.
"""

import typer
from wasabi import msg

from .. import published_models, shipped_models
from ..errors import ElmoError
from .app import app

CHECKSUMS = (
    "AllenNLP and ELMoForManyLangs publish no checksums: each file's SHA-256 is "
    "recorded at its first download and checked at every later load."
)


@app.command("download")
def download_cli(
    # fmt: off
    name: str = typer.Argument(..., metavar="NAME", help="A published model's name (the models command lists them)"),
    timeout: float = typer.Option(
        published_models.DEFAULT_TIMEOUT,
        "--timeout",
        metavar="SECONDS",
        min=0.1,
        help="Seconds to wait for the server, to connect and between two reads",
    ),
    retries: int = typer.Option(
        published_models.DEFAULT_RETRIES,
        "--retries",
        metavar="N",
        min=0,
        help="How many times a failed download starts again",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar for each file"),
    # fmt: on
) -> None:
    """Download a published ELMo model into the cache (SPACY_ELMO_CACHE moves it),
    or check the copy that is there; record or check each file's SHA-256."""
    try:
        paths = published_models.fetch_model(name, progress=progress, timeout=timeout, retries=retries)
    except ElmoError as err:
        msg.fail(f"Cannot download '{name}'", str(err), exits=1)
    if paths.weights is None:
        msg.good(f"'{name}' is in {paths.options}", "\n".join(sorted(path.name for path in paths.options.iterdir())))
    else:
        msg.good(f"'{name}' is in {paths.options.parent}", f"{paths.options.name}\n{paths.weights.name}")


@app.command("models")
def models_cli() -> None:
    """List the ELMo models by name: the shipped ones, then the published ones
    with their size, language, licence, and whether each is in the cache, and where."""
    try:
        rows = [_shipped_row(name) for name in shipped_models.SHIPPED_MODELS]
        rows += [_row(model) for model in published_models.CATALOGUE.values()]
        cache = published_models.cache_dir()
    except ElmoError as err:
        msg.fail("Cannot read the model cache", str(err), exits=1)
    msg.table(rows, header=["name", "size", "language", "licence", "cached", "where"], divider=True)
    msg.info(f"Cache: {cache} (set {published_models.CACHE_ENV} to move it). {CHECKSUMS}")
    msg.text(
        f"Download one with: python -m spacy_elmo download NAME (or spacy elmo download NAME). "
        f"With {published_models.OFFLINE_ENV}=1 nothing is downloaded."
    )


def _row(model: published_models.Published) -> list:
    cached = published_models.is_cached(model.name)
    where = published_models.model_dir(model.name) if cached else "-"
    size = f"{model.size_mb:,.0f} MB ({model.parameters / 1e6:.1f}M weights)"
    if isinstance(model, published_models.PublishedArchive):
        size = f">{model.size_mb:,.0f} MB ({model.parameters / 1e6:.1f}M weights + tables)"
    return [model.name, size, model.language, model.licence, "yes" if cached else "no", str(where)]


def _shipped_row(name: str) -> list:
    folder = shipped_models.pretrained_dir() / name
    size = sum(path.stat().st_size for path in folder.iterdir() if path.is_file()) / 1e6  # with its softmax
    return [name, f"{size:,.0f} MB", "en", "MIT", "shipped", str(folder)]
