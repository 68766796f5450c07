"""The front door never rots: every Python and shell snippet of README.md, the
CHANGELOG, docs/ (the studies' records in docs/results/ too) and the benchmark
pages runs here, and every link and path in them resolves.

A fenced ``python`` or ``bash`` block runs in a fresh process, in an empty
folder that holds the repository's ``pretrained/``, ``configs/`` and
``tests/`` (so the snippets' relative paths are the repository's). A
``print(...)`` whose comment starts with a value (``# (3, 5, 256): ...``,
``# True``) must print that value. An HTML comment on the line before a block
says why it is not run: ``<!-- test: skip (reason) -->`` or ``<!-- test:
needs data (what) -->``; a file with ``<!-- snippets: record ... -->`` is a
record of commands as they were run (hours each), whose blocks are not run.
Blocks that are not run still have their ``python -m spacy_elmo`` commands'
names and options checked, and the repository paths they name must exist.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "results").glob("*/README.md")),
    *sorted((ROOT / "benchmarks").glob("*.md")),
]
LINKED_INTO_THE_FOLDER = ("pretrained", "configs", "tests")
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARK = re.compile(r"^<!-- test: (skip|needs data) \((.+)\) -->$")
_RECORD = "<!-- snippets: record"
_OUTPUT = re.compile(r"^print\(.*\)\s+# ((?:\(|True|False).*)$")


class Snippet(NamedTuple):
    page: Path
    line: int
    language: str
    code: str
    not_run: Optional[str]  # why, or None when it runs

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def snippets(page: Path) -> Iterator[Snippet]:
    lines = page.read_text(encoding="utf8").splitlines()
    record = any(line.startswith(_RECORD) for line in lines)
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        mark = _MARK.match(lines[i - 1]) if i else None
        why = "a record of commands as they were run" if record else (f"{mark[1]}: {mark[2]}" if mark else None)
        yield Snippet(page, i + 1, match[1], "\n".join(lines[i + 1 : end]) + "\n", why)
        i = end + 1


ALL = [s for page in PAGES if page.exists() for s in snippets(page)]
RUN = [s for s in ALL if s.language in ("python", "bash") and s.not_run is None]


def expected_outputs(code: str) -> List[str]:
    return [m[1] for m in map(_OUTPUT.match, code.splitlines()) if m]


@pytest.fixture
def folder(tmp_path) -> Path:
    for name in LINKED_INTO_THE_FOLDER:
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("snippet", RUN, ids=[s.id for s in RUN])
def test_the_snippet_runs(snippet, folder):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    bin_dir = folder / ".bin"  # `python` in a shell snippet is this interpreter
    bin_dir.mkdir()
    # A wrapper script, not a link: a virtual environment's interpreter reached
    # through a link elsewhere no longer finds its environment (pyvenv.cfg).
    wrapper = bin_dir / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    wrapper.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    if snippet.language == "python":
        command = [sys.executable, "-c", "import torch; torch.set_num_threads(1)\n" + snippet.code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", snippet.code]
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{snippet.id} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    printed = result.stdout.splitlines()
    for expected in expected_outputs(snippet.code):
        assert any(expected.startswith(line) and line for line in printed), (
            f"{snippet.id}: expected a line that starts {expected!r}; printed {printed}"
        )


def spacy_elmo_commands(code: str) -> Iterator[List[str]]:
    """The argument lists of the ``python -m spacy_elmo`` commands of a shell snippet."""
    joined = re.sub(r"\\\n\s*", " ", code)
    for line in joined.splitlines():
        line = line.split(" #", 1)[0]
        for part in re.split(r"&&|\|", line):
            words = shlex.split(part, comments=False)
            for i in range(len(words) - 2):
                if words[i : i + 2] == ["-m", "spacy_elmo"]:
                    yield words[i + 2 :]


CHECKED = [s for s in ALL if s.language == "bash" and not s.not_run == "a record of commands as they were run"]


@pytest.mark.parametrize("snippet", CHECKED, ids=[s.id for s in CHECKED])
def test_the_commands_and_paths_a_snippet_names_exist(snippet):
    import typer

    from spacy_elmo.cli import app

    group = typer.main.get_command(app)
    for words in spacy_elmo_commands(snippet.code):
        command = group.commands.get(words[0])
        assert command is not None, f"{snippet.id}: no command {words[0]!r}"
        options = {opt for param in command.params for opt in getattr(param, "opts", [])}
        for word in words[1:]:
            if word.startswith("-") and not word.startswith("--paths.") and not re.match(r"--[a-z_]+\.", word):
                assert word.split("=")[0] in options, f"{snippet.id}: {words[0]} has no option {word}"
    for path in re.findall(r"(?<![\w/.])((?:configs|pretrained)/[\w./-]+)", snippet.code):
        assert (ROOT / path.rstrip(".")).exists(), f"{snippet.id}: {path} does not exist"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(page: Path) -> set:
    lines, fence, found = page.read_text(encoding="utf8").splitlines(), False, set()
    for line in lines:
        fence ^= line.startswith("```")
        if not fence and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists()], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_a_page_resolves(page):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"\w+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: the link {target} names no file"
        if anchor and file.suffix == ".md":
            assert anchor in _anchors(file), f"{page.name}: {file.name} has no heading for #{anchor}"


def test_the_readme_is_a_front_door():
    assert len((ROOT / "README.md").read_text(encoding="utf8").splitlines()) <= 300
