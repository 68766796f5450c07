from experiments.run import v2eval


def test_runs_are_listed_seed_by_seed_and_each_group_ends_with_its_test_scores():
    jobs = v2eval.plan_jobs(["converged"], [0, 1], steps=3000)
    names = [job.name for job in jobs]
    assert names[:4] == ["ner_baseline_converged_seed0", "ner_elmo_v2_converged_seed0",
                         "sentiment5_baseline_converged_seed0", "sentiment5_elmo_v2_converged_seed0"]
    evaluate_ner = jobs[names.index("evaluate_converged_ner")]
    assert set(evaluate_ner.needs) == {f"ner_{run}_converged_seed{seed}" for run in ("baseline", "elmo_v2")
                                       for seed in (0, 1)}
    assert evaluate_ner.command[-2:] == ("training/v2eval/ner_baseline_converged", "training/v2eval/ner_elmo_v2_converged")
    elmo = jobs[1].command
    assert elmo[elmo.index("--training.max_steps") + 1] == "3000"
    assert elmo[elmo.index("--paths.elmo") + 1] == v2eval.BILM
    assert "--paths.elmo" not in jobs[0].command  # the baseline reads no biLM


def test_each_ablation_is_one_setting_away_from_the_untuned_elmo_run():
    reference = ("--training.max_steps", "1000", "--paths.elmo", v2eval.BILM)
    for run in v2eval.ablation_runs():
        assert run.settings[:4] == reference and run.task == "ner"
        extra = run.settings[4:]
        if run.config == "configs/ner_elmo.cfg":
            assert len(extra) == 2  # one setting and its value
        else:
            assert run.config == "configs/ner_elmo_output.cfg" and not extra


def test_a_seed_is_done_only_when_trained_from_the_same_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = v2eval.ablation_runs()[0]
    assert not run.is_trained(0)  # nothing trained here


def test_tasks_limit_the_plan():
    names = [job.name for job in v2eval.plan_jobs(["converged", "ablations"], [0], steps=3000, tasks=["ner"])]
    assert names and not any("sentiment5" in name for name in names)
    assert "evaluate_converged_ner" in names and "evaluate_ablations_ner" in names


def test_named_runs_limit_the_plan_and_their_evaluation():
    jobs = v2eval.plan_jobs(["ablations"], [0, 1], steps=3000, only=["ner_elmo_v2_dropout05"])
    assert [job.name for job in jobs] == ["ner_elmo_v2_dropout05_seed0", "ner_elmo_v2_dropout05_seed1",
                                          "evaluate_ablations_ner"]
    assert jobs[-1].command[-1] == "training/v2eval/ner_elmo_v2_dropout05"
