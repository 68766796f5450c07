"""Reading raw text and preparing it: bad bytes, huge lines, reuse."""
import io

import numpy
import pytest

from spacy_elmo.errors import ElmoError
from spacy_elmo.training.data.prepared import PreparedCorpus, prepare_corpus
from spacy_elmo.training.data.reader import ReadStats, find_files, read_lines
from spacy_elmo.training.data.tokenizers import WHITESPACE
from spacy_elmo.util import split_lines


def test_bad_bytes_are_counted_and_skipped_never_fatal(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(
        b"\xef\xbb\xbfthe first line\n"  # byte-order mark
        b"\n   \n"  # empty lines
        b"caf\xe9 latin-1 is not utf-8\n"
        b"binary \x00\x01\x02 data\n"
        b"\xff\xfe\xfd\n"
        b"the last line without a newline"
    )
    stats = ReadStats()
    lines = list(read_lines([path], stats))
    assert lines == ["the first line", "the last line without a newline"]
    assert (stats.lines, stats.empty_lines, stats.skipped_lines) == (2, 2, 3)
    assert stats.skipped_bytes == len(b"caf\xe9 latin-1 is not utf-8\n") + len(b"binary \x00\x01\x02 data\n") + 4
    corpus = prepare_corpus([path], WHITESPACE, tmp_path / "prepared", progress=False, log=lambda m: None)
    assert corpus.meta["read"]["skipped_lines"] == 3
    assert corpus.n_sentences == 2


def test_a_10_mb_line_streams_in_pieces(tmp_path):
    path = tmp_path / "one_line.txt"
    words = ("alpha beta gamma délta " * 500_000).encode("utf8")  # 12 MB, no newline
    path.write_bytes(words)
    pieces = list(split_lines(path.open("rb"), 100_000))
    assert b"".join(pieces) == words
    assert max(len(p) for p in pieces) <= 100_000
    assert all(p.endswith(b" ") for p in pieces[:-1])  # cut at whitespace, no word split
    corpus = prepare_corpus([path], WHITESPACE, tmp_path / "prepared", progress=False, log=lambda m: None)
    assert corpus.n_tokens == 2_000_000
    assert sorted(corpus.words) == ["alpha", "beta", "délta", "gamma"]


def test_pieces_without_whitespace_are_cut_between_characters():
    text = ("€" * 10_000).encode("utf8")
    pieces = list(split_lines(io.BytesIO(text), 1000))
    assert b"".join(pieces) == text
    assert all(p.decode("utf8") for p in pieces)


def test_folders_are_read_recursively_and_missing_paths_are_an_error(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "2.txt").write_text("x")
    (tmp_path / "a" / "b" / "1.txt").write_text("y")
    (tmp_path / "a" / ".hidden").write_text("z")
    assert [p.name for p in find_files([tmp_path / "a"])] == ["2.txt", "1.txt"]
    with pytest.raises(ElmoError, match="E301"):
        find_files([tmp_path / "missing.txt"])


def test_spacy_tokenizer_splits_sentences_and_keeps_token_texts(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("Hello world. It's a test!\nSecond  line here\n", encoding="utf8")
    corpus = prepare_corpus([path], "blank:en", tmp_path / "prepared", progress=False, log=lambda m: None)
    sentences = [
        [corpus.words[i] for i in corpus.tokens[a:b]] for a, b in zip(corpus.offsets[:-1], corpus.offsets[1:])
    ]
    assert sentences == [["Hello", "world", "."], ["It", "'s", "a", "test", "!"], ["Second", " ", "line", "here"]]


def test_prepared_data_is_reused_until_the_text_changes(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("a b c\nd e\n")
    messages = []
    first = prepare_corpus([path], WHITESPACE, tmp_path / "prepared", progress=False, log=messages.append)
    again = prepare_corpus([path], WHITESPACE, tmp_path / "prepared", progress=False, log=messages.append)
    assert messages[1].startswith("Reusing") and again.n_tokens == first.n_tokens == 5
    path.write_text("a b c\nd e f g\n")
    changed = prepare_corpus([path], WHITESPACE, tmp_path / "prepared", progress=False, log=messages.append)
    assert changed.n_tokens == 7
    numpy.testing.assert_array_equal(PreparedCorpus.load(tmp_path / "prepared").counts, changed.counts)
    (tmp_path / "not_ours").mkdir()
    (tmp_path / "not_ours" / "file").write_text("keep")
    with pytest.raises(ElmoError, match="E302"):
        prepare_corpus([path], WHITESPACE, tmp_path / "not_ours", progress=False, log=messages.append)


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_crlf_and_cr_text_is_read_and_prepared_as_lf_text(tmp_path, end):
    text = "the cat sat .\n\nOn  the mat\nlast line"
    (tmp_path / "lf.txt").write_bytes(text.encode())
    (tmp_path / "other.txt").write_bytes(text.replace("\n", end).encode())
    lf_stats, other_stats = ReadStats(), ReadStats()
    assert list(read_lines([tmp_path / "other.txt"], other_stats)) == list(read_lines([tmp_path / "lf.txt"], lf_stats))
    assert (other_stats.lines, other_stats.empty_lines) == (lf_stats.lines, lf_stats.empty_lines) == (3, 1)
    lf = prepare_corpus([tmp_path / "lf.txt"], WHITESPACE, tmp_path / "p_lf", progress=False, log=lambda m: None)
    other = prepare_corpus([tmp_path / "other.txt"], WHITESPACE, tmp_path / "p_other", progress=False,
                           log=lambda m: None)
    assert other.words == lf.words and other.tokens.tolist() == lf.tokens.tolist()
    assert other.offsets.tolist() == lf.offsets.tolist() and other.n_sentences == 3


def test_a_named_pipe_is_named_as_such(tmp_path):
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ElmoError, match=r"E321.*'.*pipe' is a named pipe \(FIFO\), not a regular file or a folder"):
        find_files([fifo])
