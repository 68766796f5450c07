from pathlib import Path

import pytest
import spacy
import typer

from experiments.studies import v2eval


def test_runs_are_listed_seed_by_seed_and_each_group_ends_with_its_test_scores():
    from experiments.engine.run import Run as EngineRun

    jobs = v2eval.plan_jobs(["converged"], [0, 1], steps=3000)
    names = [job.name for job in jobs]
    assert names[:4] == [
        "ner_baseline_converged_seed0",
        "ner_elmo_v2_converged_seed0",
        "sentiment5_baseline_converged_seed0",
        "sentiment5_elmo_v2_converged_seed0",
    ]
    scores_ner = jobs[names.index("scores_converged_ner")]
    assert set(scores_ner.needs) == {
        f"ner_{run}_converged_seed{seed}" for run in ("baseline", "elmo_v2") for seed in (0, 1)
    }
    assert scores_ner.command[1:5] == ("-m", "experiments.engine.views", v2eval.RECORDS, v2eval.METRICS)
    assert set(scores_ner.command[5:]) == {
        f"ner_{run}_converged/seed{seed}" for run in ("baseline", "elmo_v2") for seed in (0, 1)
    }
    runs = [EngineRun.from_json(job.command[job.command.index("--run") + 1]) for job in jobs[:2]]
    assert all("--keep-model" in job.command and job.command[3:5] == (v2eval.RECORDS, v2eval.WORK) for job in jobs[:2])
    baseline, elmo = (run.settings for run in runs)
    assert runs[1].id == "ner_elmo_v2_converged/seed0" and runs[1].test == "corpus/v2eval/ner/test.spacy"
    assert elmo["training.max_steps"] == 3000 and elmo["paths.elmo"] == v2eval.BILM
    assert "paths.elmo" not in baseline  # the baseline reads no biLM


def test_each_ablation_is_one_setting_away_from_the_untuned_elmo_run_of_its_task():
    reference = ("--training.max_steps", "1000", "--paths.elmo", v2eval.BILM)
    runs = v2eval.ablation_runs()
    for task in v2eval.CORPUS:
        own = [run for run in runs if run.task == task]
        assert own[0].name == f"{task}_elmo_v2" and own[0].settings == reference  # the reference comes first
        for run in own[1:]:
            assert run.settings[:4] == reference and run.name.startswith(f"{task}_elmo_v2_")
            extra = run.settings[4:]
            if run.config == v2eval.CONFIG[task, True]:
                assert len(extra) == 2  # one setting and its value
                assert extra[0] == "--components.elmo.frozen" or extra[0].startswith(
                    f"--components.{v2eval.PIPE[task]}.model.tok2vec.elmo"
                )
            else:
                assert run.config == v2eval.OUTPUT_CONFIG[task] and not extra
    assert {run.name for run in runs} >= {"ner_elmo_v2_finetuned", "sentiment5_elmo_v2_output"}


def test_the_bilstm_configs_differ_from_the_task_configs_in_the_encoder_alone(tmp_path, monkeypatch):
    from confection import Config

    monkeypatch.setattr(v2eval, "DERIVED", tmp_path / "configs")
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    v2eval.write_bilstm_configs()
    for (task, elmo), source in v2eval.CONFIG.items():
        original = Config().from_disk(source, interpolate=False)
        derived = Config().from_disk(v2eval.bilstm_config(task, elmo), interpolate=False)
        tok2vec = derived["components"][v2eval.PIPE[task]]["model"]["tok2vec"]
        assert tok2vec["encode"] == v2eval.BILSTM
        tok2vec["encode"] = original["components"][v2eval.PIPE[task]]["model"]["tok2vec"]["encode"]
        assert derived == original
    nlp = spacy.util.load_model_from_config(
        Config().from_disk(v2eval.bilstm_config("ner", True)), auto_fill=True, validate=True
    )
    encoder = nlp.get_pipe("ner").model.get_ref("tok2vec").layers[0].get_ref("encode")
    assert encoder.name.startswith("with_padded") and encoder.get_dim("nO") == v2eval.BILSTM["width"]
    encoders = {run.name: run for run in v2eval.encoder_runs(3000)}
    converged = {run.name: run for run in v2eval.converged_runs(3000)}
    for task in v2eval.CORPUS:
        for kind, elmo in (("baseline", False), ("elmo_v2", True)):
            run, twin = encoders[f"{task}_{kind}_bilstm"], converged[f"{task}_{kind}_converged"]
            assert run.settings == twin.settings and run.config == str(v2eval.bilstm_config(task, elmo))


def test_a_seed_is_done_only_when_trained_from_the_same_settings(tmp_path, monkeypatch):
    from experiments.engine.run import is_done

    monkeypatch.chdir(tmp_path)
    run = v2eval.ablation_runs()[1]
    assert not is_done(run.run(0), Path(v2eval.RECORDS))  # nothing trained here


def test_tasks_limit_the_plan():
    names = [job.name for job in v2eval.plan_jobs(["converged", "ablations"], [0], steps=3000, tasks=["ner"])]
    assert names and not any("sentiment5" in name for name in names)
    assert "scores_converged_ner" in names and "scores_ablations_ner" in names


def test_named_runs_limit_the_plan_and_their_evaluation():
    jobs = v2eval.plan_jobs(["ablations"], [0, 1], steps=3000, only=["ner_elmo_v2_dropout05"])
    assert [job.name for job in jobs] == [
        "ner_elmo_v2_dropout05_seed0",
        "ner_elmo_v2_dropout05_seed1",
        "scores_ablations_ner",
    ]
    assert jobs[-1].command[-2:] == ("ner_elmo_v2_dropout05/seed0", "ner_elmo_v2_dropout05/seed1")


def test_the_bilm_copy_follows_its_source_so_a_changed_bilm_is_seen_by_every_fingerprint(tmp_path, monkeypatch):
    from experiments.engine.run import digest

    monkeypatch.chdir(tmp_path)
    source = tmp_path / "bilm"
    source.mkdir()
    (source / "options.json").write_text("{}")
    (source / "weights.hdf5").write_bytes(b"first")
    v2eval.sync_bilm(source)
    copied = digest(Path(v2eval.BILM))
    v2eval.sync_bilm(source)
    assert digest(Path(v2eval.BILM)) == copied  # unchanged source: nothing rewritten
    (source / "weights.hdf5").write_bytes(b"second")
    v2eval.sync_bilm(source)
    assert (Path(v2eval.BILM) / "weights.hdf5").read_bytes() == b"second"
    (source / "options.json").unlink()
    with pytest.raises(typer.BadParameter, match="holds no options.json"):
        v2eval.sync_bilm(source)


def test_the_glove_runs_are_the_converged_runs_with_static_vectors():
    converged = {run.name: run for run in v2eval.converged_runs(3000)}
    glove = {run.name: run for run in v2eval.glove_runs(3000)}
    assert set(glove) == {
        "ner_glove_converged",
        "ner_glove_elmo_v2_converged",
        "sentiment5_glove_converged",
        "sentiment5_glove_elmo_v2_converged",
    }
    for name, run in glove.items():
        twin = converged[name.replace("glove_converged", "baseline_converged").replace("glove_elmo_v2", "elmo_v2")]
        assert run.config == twin.config and run.settings[: len(twin.settings)] == twin.settings
        extra = run.settings[len(twin.settings) :]
        assert extra[:2] == ("--paths.vectors", v2eval.GLOVE)
        assert extra[2] == f"--components.{v2eval.PIPE[run.task]}.model.tok2vec.embed.include_static_vectors"
        assert extra[3:] == ("true",)


def test_the_glove_group_without_the_vectors_says_how_to_make_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(typer.BadParameter, match="fetch-glove"):
        v2eval.run_cli(
            jobs=1,
            groups="glove",
            seeds="0",
            steps=3000,
            tasks="ner",
            minutes=0,
            runs="",
            bilm="elmo-en-small",
            published="",
        )
