import os
import subprocess
import sys

import pytest

from spacy_elmo.util import _HOST, atomic_path, remove_stale_temporaries, swap_directory


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_stale_temporaries_of_the_same_target_are_removed(tmp_path):
    target = tmp_path / "out.hdf5"
    stale = tmp_path / f".out.hdf5.{_HOST}-{dead_pid()}.abc123.tmp"
    live = tmp_path / f".out.hdf5.{_HOST}-{os.getpid()}.def456.tmp"
    other_host = tmp_path / f".out.hdf5.elsewhere-{dead_pid()}.ghi789.tmp"
    other_target = tmp_path / f".other.hdf5.{_HOST}-{dead_pid()}.jkl012.tmp"
    for path in (stale, live, other_host, other_target):
        path.write_text("partial")
    with atomic_path(target) as tmp:
        assert f"{_HOST}-{os.getpid()}." in tmp.name  # a killed writer can be recognised
        tmp.write_text("done")
    assert target.read_text() == "done"
    assert not stale.exists()
    assert live.exists() and other_host.exists() and other_target.exists()
    assert remove_stale_temporaries(target) == []


def test_an_error_or_interrupt_leaves_nothing(tmp_path):
    for error in (ValueError, KeyboardInterrupt, SystemExit):
        with pytest.raises(error):
            with atomic_path(tmp_path / "out.txt") as tmp:
                tmp.write_text("partial")
                raise error()
    assert list(tmp_path.iterdir()) == []


def test_a_swapped_folder_replaces_the_old_one_only_when_complete(tmp_path):
    target = tmp_path / "model"
    with swap_directory(target) as tmp:  # a new folder
        (tmp / "weights").write_text("one")
    assert (target / "weights").read_text() == "one"
    for error in (ValueError, KeyboardInterrupt):
        with pytest.raises(error):
            with swap_directory(target) as tmp:
                (tmp / "weights").write_text("partial")
                raise error()
        assert [p.name for p in tmp_path.iterdir()] == ["model"] and (target / "weights").read_text() == "one"
    with swap_directory(target) as tmp:
        (tmp / "other").write_text("two")
    assert [p.name for p in target.iterdir()] == ["other"] and [p.name for p in tmp_path.iterdir()] == ["model"]
    # One left by a killed process goes with the next swap into the same target.
    stale = tmp_path / f".model.{_HOST}-{dead_pid()}.abc123.tmp"
    (stale / "sub").mkdir(parents=True)
    with swap_directory(target) as tmp:
        assert not stale.exists()


def test_a_swallowed_sigterm_is_raised_again_by_check():
    import signal

    from spacy_elmo.util import exit_on_sigterm

    swallowed = []
    with pytest.raises(SystemExit) as info:
        with exit_on_sigterm() as check:
            check()  # nothing received yet
            try:  # as an extension's callback that prints "Exception ignored" and goes on
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10**6):  # the handler runs in here
                    pass
            except SystemExit:
                swallowed.append(True)
            check()
    assert swallowed == [True] and info.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


LINE_ENDS = {"LF": b"\n", "CRLF": b"\r\n", "CR": b"\r"}


@pytest.mark.parametrize("end", LINE_ENDS)
def test_every_line_end_ends_a_line(end):
    import io

    from spacy_elmo.util import split_lines

    sep = LINE_ENDS[end]
    data = sep.join([b"one two", b"", b"three"]) + sep + b"last"
    lines = list(split_lines(io.BytesIO(data)))
    assert lines == [b"one two" + sep, sep, b"three" + sep, b"last"]
    assert b"".join(lines) == data
    # A "\r\n" split between two reads is one line end (the first read takes 65,536 bytes).
    long = b"x" * (65_536 - 1) + sep + b"y" + sep
    assert [line.rstrip(b"\r\n") for line in split_lines(io.BytesIO(long))] == [b"x" * 65_535, b"y"]


def test_lone_cr_and_lf_in_one_file_end_lines_alike():
    import io

    from spacy_elmo.util import split_lines

    assert list(split_lines(io.BytesIO(b"a\rb\nc\r\n\r\nd"))) == [b"a\r", b"b\n", b"c\r\n", b"\r\n", b"d"]
    # In pieces of at most 4 bytes, a line end is still where a line ends.
    assert list(split_lines(io.BytesIO(b"ab cd ef\rg"), max_bytes=4)) == [b"ab ", b"cd ", b"ef\r", b"g"]
