"""ELMoForManyLangs' models as a `BiLM`, and as a model folder of ours.

`efml.read_efml` reads the folder a model's zip unpacks to; `load_efml` builds
the biLM from it (as `BiLM.from_allennlp` does for such a folder), and
`convert_efml` writes it once as options.json, weights.hdf5 and the tables'
JSON files, after which no pickle is read.
"""

from pathlib import Path
from typing import Any, Dict, Union

import numpy

from ..errors import OutputError
from .efml import read_efml
from .model import BiLM
from .options import BiLMOptions
from .weights import WEIGHTS_NAME, copy_weights

PathLike = Union[str, Path]


def load_efml(folder: PathLike, **kwargs: Any) -> BiLM:
    """An ELMoForManyLangs model's folder as a `BiLM` (kwargs: the BiLM's, e.g. ``stateful``)."""
    return _built(*read_efml(folder), **kwargs)


def convert_efml(folder: PathLike, output: PathLike, dtype: str = "float32") -> BiLMOptions:
    """Write an ELMoForManyLangs model's folder as a model folder of ours:
    options.json, weights.hdf5 (datasets of `dtype`) and the tables' JSON
    files (`options.TABLE_FILES`), which `BiLM.from_allennlp(output)` reads
    with no pickle involved. E202 where `output` holds any of those files
    already (nothing is written then)."""
    options, values = read_efml(folder)
    output = Path(output)
    for name in (*options.to_files(), WEIGHTS_NAME):
        if (output / name).exists():
            raise OutputError("E202", path=output / name)
    _built(options, values).save_allennlp(output, dtype)
    return options


def _built(options: BiLMOptions, values: Dict[str, numpy.ndarray], **kwargs: Any) -> BiLM:
    model = BiLM(options, **kwargs)
    copy_weights(model, values)
    return model
