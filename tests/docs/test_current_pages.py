"""The pages that say what is true now keep to it: docs/results.md gives one answer per question,
each from a record kept beside its data; benchmarks/README.md has one dated table of current
figures per machine kind, each figure with its command; docs/reliability.md has one table; none
of them narrates history (passes, rounds, commit hashes), which lives in CHANGELOG.md and
benchmarks/HISTORY.md; and the GPU runs' archive holds exactly what its page lists."""

import re
import tarfile
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results.md"
RECORDS = ROOT / "docs" / "results"
BENCHMARKS = ROOT / "benchmarks" / "README.md"
RELIABILITY = ROOT / "docs" / "reliability.md"
GPU_RUNS_PAGE = ROOT / "benchmarks" / "gpu_runs.md"
GPU_RUNS_ARCHIVE = ROOT / "benchmarks" / "gpu_runs.tar.xz"
CURRENT_PAGES = [RESULTS, BENCHMARKS, RELIABILITY, ROOT / "docs" / "gpu.md"]
MACHINE_KINDS = ("CPU", "GPU")
_DATE = re.compile(r"^20\d\d-\d\d-\d\d$")
_HISTORY = re.compile(
    r"\b(?:first|second|third|fourth|fifth) pass\b|\bround \d|\bearlier\b|\bused to\b|\bbefore,"
    r"|\bno longer\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b",
    re.I,
)
_RECORD_LINK = re.compile(r"\]\((results/([\w-]+)/README\.md)(?:#[\w-]+)?\)")


def _read(page: Path) -> str:
    return page.read_text(encoding="utf8")


def _sections(text: str, level: str) -> Dict[str, str]:
    """Each heading of one level (outside code blocks) with the text under it, to the next such heading."""
    found: Dict[str, List[str]] = {}
    current, fence = None, False
    for line in text.splitlines():
        fence ^= line.startswith("```")
        if not fence and line.startswith(level + " "):
            current = line[len(level) + 1 :].strip()
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {title: "\n".join(lines) for title, lines in found.items()}


def _prose(text: str) -> str:
    """The text without code blocks, code spans and link targets: what a reader reads as sentences."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def _tables(text: str) -> List[List[List[str]]]:
    """The markdown tables of a text, each a list of rows of cells (header and rule left out)."""
    tables, rows, lines = [], None, text.splitlines()
    for i, line in enumerate(lines):
        is_header = line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("| ---")
        if is_header:
            rows = []
            tables.append(rows)
        elif rows is not None and line.startswith("| ") and not line.startswith("| ---"):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif not line.startswith("|"):
            rows = None
    return tables


def test_the_results_page_answers_each_question_once_from_a_record():
    questions = [
        line[3:].strip()
        for line in _read(RESULTS).splitlines()
        if line.startswith("## ") and line.rstrip().endswith("?")
    ]
    assert len(questions) >= 8, questions
    assert len(set(questions)) == len(questions), "a question is answered twice"
    for title, body in _sections(_read(RESULTS), "##").items():
        if title.endswith("?"):
            linked = [path for path, _ in _RECORD_LINK.findall(body)]
            assert linked, f"docs/results.md: {title!r} links to no record"
            assert all((RESULTS.parent / path).is_file() for path in linked), linked


def test_every_study_keeps_its_record_beside_its_data_and_the_results_page_links_it():
    linked = {study for _, study in _RECORD_LINK.findall(_read(RESULTS))}
    studies = sorted(p.name for p in RECORDS.iterdir() if p.is_dir())
    assert studies
    for study in studies:
        assert (RECORDS / study / "README.md").is_file(), f"docs/results/{study}/ has no README.md record"
        assert study in linked, f"docs/results.md does not link the record of docs/results/{study}"
    assert not list(RECORDS.glob("*.png")), "a chart outside its study's folder"


def _current_figures() -> Dict[str, str]:
    return _sections(_sections(_read(BENCHMARKS), "##")["Current figures"], "###")


def test_the_benchmark_page_has_one_table_of_current_figures_per_machine_kind():
    kinds = [title.split(":")[0] for title in _current_figures()]
    assert sorted(kinds) == sorted(MACHINE_KINDS), kinds


@pytest.mark.parametrize("kind", MACHINE_KINDS)
def test_each_current_figure_has_its_date_machine_and_command(kind):
    ((title, body),) = [(t, b) for t, b in _current_figures().items() if t.startswith(kind + ":")]
    tables = _tables(body)
    assert len(tables) == 1, f"{title}: {len(tables)} tables"
    defined = set(re.findall(r"#\s*([A-Z]\d+)\b", "".join(re.findall(r"```bash\n(.*?)```", body, re.S))))
    assert tables[0], f"{title}: the table is empty"
    for row in tables[0]:
        assert [cell for cell in row if _DATE.match(cell)], f"{title}: no date in {row}"
        label = row[-1]
        assert label in defined, f"{title}: the command {label!r} of {row} is not in the section's commands"


@pytest.mark.parametrize("page", CURRENT_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_of_what_is_true_now_narrates_no_history(page):
    found = _HISTORY.findall(_prose(_read(page)))
    assert not found, f"{page.relative_to(ROOT)} narrates history ({found}): it belongs in the CHANGELOG or HISTORY"


def test_the_reliability_page_has_one_table_of_what_happens_now():
    headers = [
        line
        for i, line in enumerate(_read(RELIABILITY).splitlines()[:-1])
        if line.startswith("|") and _read(RELIABILITY).splitlines()[i + 1].startswith("| ---")
    ]
    assert headers == ["| what was tried | what happens now | test |"], headers


def test_the_gpu_runs_archive_holds_exactly_what_its_page_lists():
    listed = set(re.findall(r"^gpu_runs/\S+$", _read(GPU_RUNS_PAGE), re.M))
    with tarfile.open(GPU_RUNS_ARCHIVE) as archive:
        members = {member.name for member in archive.getmembers() if member.isfile()}
    assert listed and listed == members, (sorted(listed - members), sorted(members - listed))
    assert not (ROOT / "benchmarks" / "gpu_runs").exists(), "the raw GPU outputs are in the archive, not the tree"
