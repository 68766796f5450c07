"""The downstream evaluation of biLM v2 (the `full` workflow): converged comparisons, GloVe, the
paper's ablations and its kind of task encoder.

    python -m experiments.studies.v2eval --jobs 2 [--groups converged,glove,ablations,encoders] \\
        [--tasks ner,sentiment5] [--seeds "0 1 ..."] [--runs ner_elmo_v2_dropout05,...]
    python -m experiments.studies.v2eval plan               # the jobs, and which are done

Every run reads the corpora that ``experiments.convert`` wrote to corpus/v2eval/{ner,sentiment5}
and one biLM, frozen unless a run says otherwise and not tuned to the task: ``--bilm``'s two weight
files (the shipped ``elmo-en-small`` by default; ``--published NAME`` for one of the
published AllenNLP models), copied to training/v2eval/bilm_v2 whenever they differ from what is
there, so that every run's fingerprint sees a change of biLM. The groups:

converged   baseline and ELMo on both tasks, trained for ``--steps`` (3,000) with dev scores every
            250 steps, so that the dev curves show where the baselines stop improving;
ablations   each task at 1,000 steps: its untuned ELMo run ({task}_elmo_v2) and runs one setting
            away from it: the top layer alone instead of the learned mix, the plain average of
            the layers, the mix held near the average (λ = 1 instead of 0.001; these three are the
            paper's Table 2), ELMo dropout 0.5 instead of 0.1, the biLM fine-tuned with the task
            (``frozen = false``), and ELMo at the encoder's output too (``configs/*_elmo_output.cfg``);
glove       each task trained to convergence as in ``converged`` with GloVe 6B 50d as static
            vectors in the embedding (corpus/v2eval/glove, from ``fetch-glove`` and
            ``experiments.data.glove``), without and with ELMo: the paper's baselines use GloVe;
encoders    each task trained as the converged runs are, with the paper's kind of task encoder, a
            BiLSTM (spaCy's ``TorchBiLSTMEncoder``, 2 layers), in place of the CNN, ± ELMo: the
            configs are the task's own with the ``encode`` block replaced, written to
            training/v2eval/configs/.

Each named run of a group (a `Variant`, ``--runs``) is trained once per seed. Runs are listed seed by
seed, baseline next to ELMo, so that a stopped evaluation leaves paired seeds; each seed is a run of the
engine (``<run>/seed<N>``, trained, scored on the test split and recorded in metrics/v2eval/records, its
pipeline kept in training/v2eval/<run>/seed<N>), skipped when its record holds the fingerprint of what it
would be trained from now. The engine's launcher runs them ``--jobs`` at a time under the lock of
training/v2eval. Each group ends with per-seed score files of its runs, metrics/v2eval/<run>/seedN.json
(``experiments.engine.views``), the format the reports read. Then ``python -m
experiments.report.v2eval`` writes the report of every comparison, and ``experiments.report.paired``
and ``experiments.report.dev_curves`` compare any runs by hand.
"""

import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import typer

from experiments.data.inputs import exit_on_bad_input
from experiments.data.published import published_bilm
from experiments.engine.jobs import Job
from experiments.engine.plan import launch, run_job, show_plan
from experiments.engine.run import Run, digest, overrides_from_args
from experiments.errors import run_app
from experiments.studies.cli import finish, parse_seeds_option, study_app
from spacy_elmo.published_models import model_folder
from spacy_elmo.shipped_models import ELMO_EN_SMALL

PYTHON = sys.executable
BILM = "training/v2eval/bilm_v2"
BILM_FILES = ("options.json", "weights.hdf5")
# The engine's records of the runs; per-seed score files of them (experiments.engine.views) for the
# reports; the trained pipelines (kept: the report reads their layer mixes and dev curves); the logs.
RECORDS = "metrics/v2eval/records"
METRICS = "metrics/v2eval"
WORK = "training/v2eval"
LOGS = Path("logs/v2eval")
GROUPS = ("converged", "glove", "ablations", "encoders")
CORPUS = {"ner": "corpus/v2eval/ner", "sentiment5": "corpus/v2eval/sentiment5"}
CONFIG = {
    ("ner", False): "configs/ner_baseline.cfg",
    ("ner", True): "configs/ner_elmo.cfg",
    ("sentiment5", False): "configs/textcat_baseline.cfg",
    ("sentiment5", True): "configs/textcat_elmo.cfg",
}
OUTPUT_CONFIG = {"ner": "configs/ner_elmo_output.cfg", "sentiment5": "configs/textcat_elmo_output.cfg"}
PIPE = {"ner": "ner", "sentiment5": "textcat"}
# The paper's task encoders: a BiLSTM, here 2 layers of spaCy's, as wide as the CNN it replaces.
BILSTM = {"@architectures": "spacy.TorchBiLSTMEncoder.v1", "width": 96, "depth": 2, "dropout": 0.0}
DERIVED = Path("training/v2eval/configs")
GLOVE = "corpus/v2eval/glove"


@dataclass(frozen=True)
class Variant:
    """One named run of the study (``--runs``): a config and its settings, trained once per seed into
    training/v2eval/<name>/seed<N>."""

    name: str
    task: str
    config: str
    settings: Tuple[str, ...]

    @property
    def overrides(self) -> Tuple[str, ...]:
        """The run's `spacy train` settings: the task's data, then its own."""
        data = ("--paths.train", f"{CORPUS[self.task]}/train.spacy", "--paths.dev", f"{CORPUS[self.task]}/dev.spacy")
        return (*data, *self.settings)

    def run(self, seed: int) -> Run:
        """The run of one seed, as the engine trains, scores and records it: ``<name>/seed<N>``."""
        return Run(
            id=f"{self.name}/seed{seed}",
            config=self.config,
            overrides=tuple(overrides_from_args(self.overrides).items()),
            seed=seed,
            test=f"{CORPUS[self.task]}/test.spacy",
            labels={"run": self.name, "task": self.task, "seed": str(seed)},
        )


def converged_runs(steps: int) -> List[Variant]:
    """Baseline and ELMo on each task, ``steps`` steps with a dev score every 250."""
    return [
        Variant(
            f"{task}_{'elmo_v2' if elmo else 'baseline'}_converged",
            task,
            CONFIG[task, elmo],
            ("--training.max_steps", str(steps), "--training.eval_frequency", "250")
            + (("--paths.elmo", BILM) if elmo else ()),
        )
        for task in CORPUS
        for elmo in (False, True)
    ]


def glove_runs(steps: int) -> List[Variant]:
    """The converged runs with GloVe in the embedding: {task}_glove_converged, {task}_glove_elmo_v2_converged."""
    return [
        replace(
            run,
            name=f"{run.task}_glove_{run.name[len(run.task) + 1 :].removeprefix('baseline_')}",
            settings=run.settings
            + (
                "--paths.vectors",
                GLOVE,
                f"--components.{PIPE[run.task]}.model.tok2vec.embed.include_static_vectors",
                "true",
            ),
        )
        for run in converged_runs(steps)
    ]


def ablation_runs() -> List[Variant]:
    """Each task at 1,000 steps: its untuned ELMo run, then each ablation one setting away from it."""
    runs = []
    for task in CORPUS:
        common = ("--training.max_steps", "1000", "--paths.elmo", BILM)
        elmo = f"--components.{PIPE[task]}.model.tok2vec.elmo"
        config = CONFIG[task, True]
        runs += [
            Variant(f"{task}_elmo_v2", task, config, common),
            Variant(f"{task}_elmo_v2_top_layer", task, config, common + (f"{elmo}.mix.layer", "2")),
            Variant(f"{task}_elmo_v2_average", task, config, common + (f"{elmo}.mix.average", "true")),
            Variant(f"{task}_elmo_v2_lambda1", task, config, common + (f"{elmo}.mix.l2_to_uniform", "1.0")),
            Variant(f"{task}_elmo_v2_dropout05", task, config, common + (f"{elmo}.dropout", "0.5")),
            Variant(f"{task}_elmo_v2_finetuned", task, config, common + ("--components.elmo.frozen", "false")),
            Variant(f"{task}_elmo_v2_output", task, OUTPUT_CONFIG[task], common),
        ]
    return runs


def bilstm_config(task: str, elmo: bool) -> Path:
    """Where the task's config with a BiLSTM encoder is written (``write_bilstm_configs``)."""
    return DERIVED / f"{task}_{'elmo' if elmo else 'baseline'}_bilstm.cfg"


def encoder_runs(steps: int) -> List[Variant]:
    """The converged runs with a BiLSTM encoder: {task}_baseline_bilstm, {task}_elmo_v2_bilstm. As long
    as the converged runs: the BiLSTM learns more slowly than the CNN (at 1,000 steps its NER dev F1
    is half the CNN's)."""
    return [
        replace(
            run,
            name=run.name.replace("_converged", "_bilstm"),
            config=str(bilstm_config(run.task, elmo=run.config == CONFIG[run.task, True])),
        )
        for run in converged_runs(steps)
    ]


def write_bilstm_configs() -> None:
    """Each task config with its CNN encoder block replaced by ``BILSTM``; nothing else changes."""
    from confection import Config

    from spacy_elmo.util import atomic_path

    for (task, elmo), source in CONFIG.items():
        config = Config().from_disk(source, interpolate=False)
        encoder = config["components"][PIPE[task]]["model"]["tok2vec"]
        if encoder["encode"]["width"] != BILSTM["width"]:
            raise ValueError(
                f"{source}: the encoder is {encoder['encode']['width']} wide, the BiLSTM "
                f"{BILSTM['width']}: make BILSTM's width the encoder's"
            )
        encoder["encode"] = dict(BILSTM)
        target = bilstm_config(task, elmo)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = config.to_str(interpolate=False)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            with atomic_path(target) as tmp:
                tmp.write_text(text, encoding="utf-8")


def group_runs(steps: int) -> Dict[str, List[Variant]]:
    """{group: its runs}, in GROUPS' order."""
    return {
        "converged": converged_runs(steps),
        "glove": glove_runs(steps),
        "ablations": ablation_runs(),
        "encoders": encoder_runs(steps),
    }


def plan_jobs(
    groups: Sequence[str],
    seeds: Sequence[int],
    steps: int,
    tasks: Sequence[str] = tuple(CORPUS),
    only: Sequence[str] = (),
) -> List[Job]:
    """Each group's runs of `tasks` (those named in `only`, if any) seed by seed (paired runs side by
    side), then their test scores."""
    planned = {
        group: [run for run in runs if run.task in tasks and (not only or run.name in only)]
        for group, runs in group_runs(steps).items()
    }
    jobs: List[Job] = []
    for group in groups:
        trained: Dict[str, List[Tuple[str, str]]] = {}
        for seed in seeds:
            for variant in planned[group]:
                run = variant.run(seed)
                name = f"{variant.name}_seed{seed}"
                jobs.append(run_job(run, Path(RECORDS), Path(WORK), LOGS, keep_model=True, name=name))
                trained.setdefault(variant.task, []).append((name, run.id))
        for task, names in trained.items():
            jobs.append(
                Job(
                    f"scores_{group}_{task}",
                    (PYTHON, "-m", "experiments.engine.views", RECORDS, METRICS, *(run_id for _, run_id in names)),
                    LOGS / f"scores_{group}_{task}.log",
                    needs=tuple(name for name, _ in names),
                )
            )
    return jobs


def sync_bilm(source: Path) -> None:
    """Copy ``source``'s options.json and weights.hdf5 to BILM where they differ (each write atomic)."""
    from spacy_elmo.util import atomic_path

    target = Path(BILM)
    target.mkdir(parents=True, exist_ok=True)
    for name in BILM_FILES:
        if not (source / name).is_file():
            raise typer.BadParameter(
                f"{source} holds no {name}: expected a biLM folder with options.json and "
                "weights.hdf5 (as `python -m spacy_elmo pretrain` exports)",
                param_hint="--bilm",
            )
        if not (target / name).is_file() or digest(target / name) != digest(source / name):
            with atomic_path(target / name) as tmp:
                shutil.copyfile(source / name, tmp)
            typer.echo(f"{target / name}: copied from {source}")


# The command line.

app = study_app(__doc__)


def split_names(text: str) -> List[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def planned_jobs(groups: str, seeds: str, steps: int, tasks: str, runs: str, bilm: str, published: str) -> List[Job]:
    """The options checked, the biLM copied to BILM and the BiLSTM configs written: the plan's jobs."""
    chosen = split_names(groups)
    if not chosen or any(group not in GROUPS for group in chosen):
        raise typer.BadParameter(f"expected groups among {', '.join(GROUPS)}, got {groups!r}", param_hint="--groups")
    chosen_tasks = split_names(tasks)
    if not chosen_tasks or any(task not in CORPUS for task in chosen_tasks):
        raise typer.BadParameter(f"expected tasks among {', '.join(CORPUS)}, got {tasks!r}", param_hint="--tasks")
    if "glove" in chosen and not Path(GLOVE, "config.cfg").exists():
        raise typer.BadParameter(
            f"{GLOVE} holds no spaCy vectors: run `python -m spacy project assets --extra`, "
            f"`python -m spacy project run fetch-glove`, then `python -m experiments.data.glove "
            f"assets/glove {GLOVE}`",
            param_hint="--groups",
        )
    seed_list = parse_seeds_option(seeds)
    if published:
        with exit_on_bad_input():  # an unknown name, or (what to do, one line) not downloaded
            bilm = published_bilm(published)
    sync_bilm(model_folder(bilm))
    only = split_names(runs)
    known = {variant.name for variants in group_runs(steps).values() for variant in variants}
    if any(name not in known for name in only):
        raise typer.BadParameter(
            f"expected run names among {', '.join(sorted(known))}, got {runs!r}", param_hint="--runs"
        )
    write_bilstm_configs()
    return plan_jobs(chosen, seed_list, steps, chosen_tasks, only)


GROUPS_OPTION = typer.Option(",".join(GROUPS), help="Comma-separated: " + ", ".join(GROUPS))
SEEDS = typer.Option("0 1 2 3 4 5 6 7 8 9", help="Space-separated seeds")
STEPS = typer.Option(3000, help="Training steps of the converged runs")
TASKS = typer.Option(",".join(CORPUS), help="Comma-separated: ner, sentiment5")
RUNS = typer.Option("", help="Comma-separated run names, e.g. ner_elmo_v2_dropout05 (default: all)")
BILM_OPTION = typer.Option(ELMO_EN_SMALL, help="The biLM of every ELMo run: a model's name or a biLM folder")
PUBLISHED = typer.Option(
    "",
    help="A published AllenNLP model's name instead of --bilm (assets/published/NAME, `spacy project assets --extra`)",
)


@app.command("run")
def run_cli(
    jobs: int = typer.Option(2, help="Runs side by side, one CPU thread each"),
    groups: str = GROUPS_OPTION,
    seeds: str = SEEDS,
    steps: int = STEPS,
    tasks: str = TASKS,
    minutes: float = typer.Option(0, help="Start no run after this many minutes (0: no deadline)"),
    runs: str = RUNS,
    bilm: str = BILM_OPTION,
    published: str = PUBLISHED,
) -> None:
    """Train and score every run not done yet, then each group's per-seed score files (the default command)."""
    finish(launch(planned_jobs(groups, seeds, steps, tasks, runs, bilm, published), Path(WORK), jobs, minutes))


@app.command("plan")
def plan_cli(
    groups: str = GROUPS_OPTION,
    seeds: str = SEEDS,
    steps: int = STEPS,
    tasks: str = TASKS,
    runs: str = RUNS,
    bilm: str = BILM_OPTION,
    published: str = PUBLISHED,
) -> None:
    """List the jobs and which are done (the biLM is copied first, so that the fingerprints see it)."""
    show_plan(planned_jobs(groups, seeds, steps, tasks, runs, bilm, published), typer.echo)


if __name__ == "__main__":
    run_app(app)
