"""The project workflow end to end on tiny synthetic assets (no network)."""

import csv
import json
import random
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from weasel.util import load_project_config

from experiments.data import fetch as fetch_data

ROOT = Path(__file__).parent.parent.parent
TINY = {
    "vars.tune_steps": "4",
    "vars.train_steps": "20",
    "vars.eval_frequency": "10",
}
WORDS = "the a cat dog sat ran on under mat house big small red blue went saw today very".split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + " ."


def write_assets(assets: Path, rng: random.Random) -> None:
    """A few hundred sentences in each source's real format, with fetch manifests."""
    outputs = {"ptb": [], "wiki": [], "bbc": [], "pattern": [], "wnut": [], "rt": []}
    for split in ("train", "valid", "test"):
        path = assets / "ptb" / f"{split}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(sentence(rng, 8).lower() for _ in range(20)) + "\n")
        outputs["ptb"].append(f"ptb/{split}.txt")
    wiki = {f"T{i}": {"title": f"T{i}", "extract": " ".join(sentence(rng, 9) for _ in range(4))} for i in range(40)}
    (assets / "wiki").mkdir()
    (assets / "wiki" / "summaries_en-us.json").write_text(json.dumps(wiki))
    outputs["wiki"].append("wiki/summaries_en-us.json")
    for label in ("business", "tech"):
        (assets / "bbc" / label).mkdir(parents=True)
        for i in range(5):
            (assets / "bbc" / label / f"{i:03d}.txt").write_text(f"Title {i}\n\n" + sentence(rng, 12) + "\n")
            outputs["bbc"].append(f"bbc/{label}/{i:03d}.txt")
    for rel, n_words in (("reviews/pang_lee_reviews.csv", 40), ("sentence_polarity/snippets.csv", 10)):
        path = assets / rel
        path.parent.mkdir(parents=True)
        with path.open("w", encoding="utf-8-sig", newline="") as f:
            writer = csv.writer(f)
            for i in range(60):
                positive = i % 2 == 0
                writer.writerow(
                    ["1" if positive else "-1", sentence(rng, n_words) + (" great fun" if positive else " dull mess")]
                )
        outputs["pattern"].append(rel)
    (assets / "oanc").mkdir()
    (assets / "oanc" / "tagged-en-oanc.txt").write_text(
        "\n".join(" ".join(f"{w}/NN" for w in sentence(rng, 10).split()) for _ in range(40)) + "\n"
    )
    outputs["pattern"].append("oanc/tagged-en-oanc.txt")
    lines = []
    for i in range(60):
        name = rng.choice(["Alice", "Bob", "Paris"])
        label = "geo-loc" if name == "Paris" else "person"
        for word in sentence(rng, 5).split()[:-1]:
            lines.append(f"{word}\tO")
        lines += [f"{name}\tB-{label}", "!\tO", "\t"]
    (assets / "wnut16").mkdir()
    (assets / "wnut16" / "ner.txt").write_text("\n".join(lines) + "\n")
    outputs["wnut"].append("wnut16/ner.txt")
    # Rated snippets as vaderSentiment ships them: id<TAB>rating<TAB>text, CRLF line ends.
    rows = []
    for i in range(100):
        rating = rng.uniform(-4, 4)
        mood = "great fun" if rating > 1 else "dull mess" if rating < -1 else "fine"
        rows.append(f"{i + 1}\t{rating:.6f}\t{sentence(rng, 8)} {mood}")
    (assets / "rt_snippets").mkdir()
    (assets / "rt_snippets" / "movieReviewSnippets_GroundTruth.txt").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    outputs["rt"].append("rt_snippets/movieReviewSnippets_GroundTruth.txt")
    # Manifests as fetch_data.py writes them, so that its step finds everything fetched.
    (assets / ".fetched").mkdir()
    (assets / fetch_data.PACKAGES_DIR).mkdir()
    for package in fetch_data.select_packages(None):  # what `fetch-data` extracts
        fetch_data.write_manifest(package, assets, outputs[package.key], "tiny stand-in")
        # The step's deps, as `spacy project assets` leaves them (never read: the manifests say done).
        (assets / fetch_data.PACKAGES_DIR / package.filename).write_bytes(b"")


@pytest.mark.slow
def test_all_workflow_end_to_end(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "project.yml", project)
    for folder in ("configs", "experiments"):
        shutil.copytree(ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    write_assets(project / "assets", random.Random(0))
    overrides = [arg for key, value in TINY.items() for arg in (f"--{key}", value)]
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "project", "run", "all", str(project), *overrides],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    config = load_project_config(project, overrides={k: v for k, v in TINY.items()})
    commands = {c["name"]: c for c in config["commands"]}
    for name in config["workflows"]["all"]:
        for output in commands[name].get("outputs", []):
            assert (project / output).exists(), f"{name} did not write {output}"
    report = json.loads((project / "reports" / "demo" / "results.json").read_text())
    for task in ("ner", "sentiment5"):
        assert set(report["scores"][task]) == {"baseline", "elmo"}
        assert report["gains"][task]["elmo"] is not None
        tuning = report["tuning_perplexity"][task]
        assert tuning["after"] < tuning["before"]  # the biLM learned the task's text
    table = (project / "reports" / "demo" / "results.md").read_text()
    assert "NER F1" in table and "5-class sentiment" in table and "—" not in table


PUBLISHED = "2x1024_128_2048cnn_1xhighway"
FIXTURE = ROOT / "tests" / "fixtures" / "allennlp_elmo"


def test_each_published_model_is_an_optional_asset_without_a_checksum():
    from experiments.data.published import PUBLISHED, PUBLISHED_DIR

    assets = [a for a in load_project_config(ROOT)["assets"] if a["dest"].startswith(PUBLISHED_DIR + "/")]
    assert len(assets) == 2 * len(PUBLISHED)
    for name in PUBLISHED:
        for file, remote in (("options.json", "options.json"), ("weights.hdf5", "weights.hdf5")):
            (asset,) = [a for a in assets if a["dest"] == f"{PUBLISHED_DIR}/{name}/{file}"]
            assert asset["url"] == f"https://allennlp.s3.amazonaws.com/elmo/{name}/elmo_{name}_{remote}"
            assert asset["extra"] is True and not asset.get("checksum") and asset["description"]


def test_vars_published_makes_the_elmo_runs_read_the_published_model_untuned():
    config = load_project_config(ROOT, overrides={"vars.published": PUBLISHED})
    commands = {c["name"]: c for c in config["commands"]}
    for task in ("ner", "sentiment5"):
        (tune,) = [line for line in commands[f"tune-bilm-{task}"]["script"] if "experiments.demo.tune" in line]
        args = shlex.split(tune)
        assert args[args.index("--published") + 1] == PUBLISHED and args[args.index("--profile") + 1] == "demo"
        # the folder the tune step fills (with links to the published files) is what the ELMo runs read
        assert f"training/demo/bilm_{task}/model/weights.hdf5" in commands[f"tune-bilm-{task}"]["outputs"]
        train = shlex.split(commands[f"train-{task}-elmo"]["script"][0])
        assert train[train.index("--paths.elmo") + 1] == f"training/demo/bilm_{task}/model"
    (run_v1,) = commands["run-v1"]["script"]
    args = shlex.split(run_v1)
    assert args[args.index("--published") + 1] == PUBLISHED
    (run_v2eval,) = commands["run-v2eval"]["script"]
    args = shlex.split(run_v2eval)
    assert args[args.index("--published") + 1] == PUBLISHED
    unset = load_project_config(ROOT)
    (run_v1,) = [c for c in unset["commands"] if c["name"] == "run-v1"][0]["script"]
    args = shlex.split(run_v1)
    assert args[args.index("--published") + 1] == ""  # the project's own biLM, tuned
    (run_v2eval,) = [c for c in unset["commands"] if c["name"] == "run-v2eval"][0]["script"]
    args = shlex.split(run_v2eval)
    assert args[args.index("--published") + 1] == "" and args[args.index("--bilm") + 1] == "elmo-en-small"


def test_vars_tune_text_makes_the_tune_steps_read_unlabelled_text():
    for overrides, expected in (
        ({}, ""),
        ({"vars.tune_text_ner": "corpus/v2/pretrain/train_tweets.txt"}, "corpus/v2/pretrain/train_tweets.txt"),
    ):
        commands = {c["name"]: c for c in load_project_config(ROOT, overrides=overrides)["commands"]}
        for task, text in (("ner", expected), ("sentiment5", "")):
            (tune,) = [line for line in commands[f"tune-bilm-{task}"]["script"] if "experiments.demo.tune" in line]
            args = shlex.split(tune)
            assert args[args.index("--tune-text") + 1] == text  # "": the task's training split


def test_the_full_workflow_runs_the_evaluation_then_writes_its_report():
    config = load_project_config(ROOT)
    assert config["workflows"]["full"] == ["fetch-data", "fetch-glove", "convert-v2eval", "run-v2eval", "report-v2eval"]
    commands = {c["name"]: c for c in config["commands"]}
    converted = set(commands["convert-v2eval"]["outputs"])
    assert {dep for dep in commands["run-v2eval"]["deps"] if dep.startswith("corpus/")} <= converted
    seeds = shlex.split(commands["run-v2eval"]["script"][0])
    assert seeds[seeds.index("--seeds") + 1].split() == [str(s) for s in range(10)]
    assert "reports/v2eval/results.md" in commands["report-v2eval"]["outputs"]


def tiny_tune_project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "project.yml", project)
    for folder in ("configs", "experiments"):
        shutil.copytree(ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    corpus = project / "corpus" / "demo" / "ner"
    corpus.mkdir(parents=True)
    for split in ("train", "dev"):
        DocBin(docs=[nlp(f"Bob went to Paris on day {i} .") for i in range(5)]).to_disk(corpus / f"{split}.spacy")
    return project


@pytest.mark.slow
def test_the_tune_step_with_vars_published_links_the_model_or_says_what_to_download(tmp_path):
    project = tiny_tune_project(tmp_path)
    command = [
        sys.executable,
        "-m",
        "spacy",
        "project",
        "run",
        "tune-bilm-ner",
        str(project),
        "--vars.published",
        PUBLISHED,
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: assets/published/")]
    assert f"assets/published/{PUBLISHED}/options.json and" in line and "spacy project assets --extra" in line
    folder = project / "assets" / "published" / PUBLISHED
    folder.mkdir(parents=True)
    shutil.copy(FIXTURE / "options.json", folder / "options.json")
    shutil.copy(FIXTURE / "lm_weights.hdf5", folder / "weights.hdf5")
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    model = project / "training" / "demo" / "bilm_ner" / "model"
    assert (model / "weights.hdf5").read_bytes() == (folder / "weights.hdf5").read_bytes()
    assert sorted(p.name for p in model.parent.iterdir()) == ["model"]  # no tuning run
    assert not (project / "metrics" / "demo" / "bilm_ner_after.json").exists()


def test_the_cv_workflow_runs_the_cross_validated_study_of_the_readme_then_its_report(monkeypatch):
    from typer.testing import CliRunner

    from experiments.engine.jobs import Summary
    from experiments.report import cv as cv_report
    from experiments.studies import cv

    config = load_project_config(ROOT)
    assert config["workflows"]["cv"] == ["fetch-data", "fetch-glove", "convert-cv", "run-cv", "report-cv"]
    commands = {c["name"]: c for c in config["commands"]}
    assert shlex.split(commands["convert-cv"]["script"][0])[-1] == cv.GLOVE.as_posix()
    (run,) = commands["run-cv"]["script"]
    args = shlex.split(run)
    assert args[:4] == ["python", "-m", "experiments.studies.cv", "run"]
    handed = {}
    monkeypatch.setattr(cv, "prepare", lambda study: handed.setdefault("study", study))
    monkeypatch.setattr(cv, "run_plan", lambda runs, *rest, **kwargs: handed.setdefault("runs", runs) and Summary())
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cv.app, args[3:])
    assert result.exit_code == 0, result.output
    assert handed["study"] == cv.Study()  # the README's study: 10 folds, 2 seeds, 3,000 steps, every arm
    assert [r.id for r in handed["runs"]] == [r.id for r in cv.plan_runs(cv.Study())]
    (report,) = commands["report-cv"]["script"]
    assert shlex.split(report)[3:] == ["report", "--readme", "README.md"]
    before, after = cv_report.readme_around(ROOT / "README.md")  # the block the report rewrites is there
    assert before and after
