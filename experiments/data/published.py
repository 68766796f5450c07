"""The published AllenNLP ELMo models, where project.yml's assets put them (``spacy project assets --extra``).

``assets/published/NAME/options.json`` and ``weights.hdf5`` for each NAME of `PUBLISHED`: the original,
the medium and the small model. `published_bilm` gives a model's folder once both files are there, and
says what to do where they are not.
"""

from pathlib import Path

from experiments.errors import ExperimentError

PUBLISHED_DIR = "assets/published"
PUBLISHED = ("2x4096_512_2048cnn_2xhighway", "2x2048_256_2048cnn_1xhighway", "2x1024_128_2048cnn_1xhighway")
PUBLISHED_FILES = ("options.json", "weights.hdf5")


def published_bilm(name: str) -> Path:
    """The folder of a published model, checked: an `ExperimentError` for a name that is not one
    of PUBLISHED, and one saying what to do where its files have not been downloaded."""
    if name not in PUBLISHED:
        raise ExperimentError(
            "--published",
            expected=f"one of this project's published ELMo models, "
            f"{', '.join(PUBLISHED)} (vars.published, or a study's --published)",
            found=repr(name),
            fix='name one of them, or "" for the project\'s own biLM',
        )
    folder = Path(PUBLISHED_DIR) / name
    missing = [str(folder / file) for file in PUBLISHED_FILES if not (folder / file).is_file()]
    if missing:
        raise ExperimentError(
            " and ".join(missing),
            expected=f"the published model {name}'s {' and '.join(PUBLISHED_FILES)}",
            found="no such file" if len(missing) == 1 else "neither",
            fix="run `python -m spacy project assets --extra` on a machine with internet access "
            "(the published ELMo models are downloaded from allennlp.s3.amazonaws.com), or copy "
            f"the two files there (the model's elmo_{name}_options.json and "
            f"elmo_{name}_weights.hdf5, as options.json and weights.hdf5)",
        )
    return folder
