"""`ElmoEmbedder`: AllenNLP 0.9's class of the same name, on this project's biLM.

Code written for ``allennlp.commands.elmo.ElmoEmbedder`` (Flair's legacy
``ELMoEmbeddings``, SeqVec, research code) runs with only its import changed:

    from spacy_elmo.elmo_embedder import ElmoEmbedder

    embedder = ElmoEmbedder("options.json", "weights.hdf5")   # or a catalogue name
    layers = embedder.embed_sentence(["Hello", "world", "."])  # (3, 3, 1024) numpy

The same constructor (options file, weight file, ``cuda_device``), methods and
return types. What differs, on purpose:

- **Stateless by default.** 0.9's biLM carried each batch row's LSTM state
  over to the same row of its next batch, so a sentence's vectors depended on
  what came before it (AllenNLP advised warming it up on ~1000 sentences).
  Here every sentence starts from the zero state: the same sentence gives
  the same vectors alone, in any batch, at any time. ``stateful=True`` gives
  0.9's outputs (row by row, as `BiLM` ``stateful`` does), and
  `reset_states` starts them over.
- **Files by name.** A model of the catalogue (`spacy_elmo.published_models`)
  is accepted by its name or by AllenNLP's URL of its files, and comes from
  the per-user cache; any other URL is refused (E709): download it and pass
  the path.
- **embed_file** writes `spacy_elmo.embed`'s output: the same layout as 0.9's,
  written whole or not at all (an existing file is replaced as a whole, as 0.9
  replaced it); blank lines are empty sentences (0.9 refused them), and the
  input file is left open (0.9 closed it).
"""

from itertools import islice
from os import PathLike, fspath
from pathlib import Path
from typing import IO, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import torch

from .bilm import BiLM, batch_to_ids
from .device import check_device
from .embed import embed_lines, input_lines
from .errors import InputError
from .published_models import ALLENNLP_ELMO, CATALOGUE, fetch_model, resolve_model

DEFAULT_MODEL = "allennlp-elmo-original"  # 0.9's default files
DEFAULT_BATCH_SIZE = 64
# The address of AllenNLP's models on its older pages: the same bucket and keys.
OLD_ALLENNLP_ELMO = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"
FileName = Union[str, "PathLike[str]"]


class ElmoEmbedder:
    """The biLM's layers of tokenised sentences, as numpy arrays
    ``(n_layers + 1, n_tokens, 2 * projection_dim)``: AllenNLP 0.9's interface.

    options_file: an ``options.json``, a folder holding it and
        ``weights.hdf5``, a catalogue name (``"allennlp-elmo-small"``) or
        AllenNLP's URL of a catalogue model's options file.
    weight_file: the matching ``weights.hdf5`` (or a catalogue name or URL);
        None with a folder or a catalogue name.
    cuda_device: the GPU to run on, -1 for the CPU.
    stateful: carry each batch row's state over to the next batch, as 0.9
        did (see the module's docstring); False gives deterministic vectors.
    """

    def __init__(
        self,
        options_file: FileName = DEFAULT_MODEL,
        weight_file: Optional[FileName] = None,
        cuda_device: int = -1,
        *,
        stateful: bool = False,
    ) -> None:
        self.cuda_device = cuda_device
        self.device = check_device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
        options, weights = model_files(options_file, weight_file)
        self.elmo_bilm = BiLM.from_allennlp(options, weights, stateful=stateful).to(self.device).eval()

    def reset_states(self) -> None:
        """Forget the state carried over between batches (``stateful=True``)."""
        self.elmo_bilm.reset_states()

    def batch_to_embeddings(self, batch: List[List[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """The layers of a batch, padded: activations ``(batch, n_layers + 1,
        max_tokens, dim)`` (zero at padding) and mask ``(batch, max_tokens)``."""
        ids = batch_to_ids(batch, self.elmo_bilm.options.max_characters_per_token).to(self.device)
        with torch.inference_mode():
            output = self.elmo_bilm(ids)
        return output.layers.transpose(0, 1), output.mask

    def embed_sentence(self, sentence: List[str]) -> numpy.ndarray:
        """The layers of one tokenised sentence: ``(n_layers + 1, n_tokens, dim)``."""
        return self.embed_batch([sentence])[0]

    def embed_batch(self, batch: List[List[str]]) -> List[numpy.ndarray]:
        """The layers of each tokenised sentence of `batch`, in order, each
        ``(n_layers + 1, n_tokens, dim)`` float32 (``n_tokens`` 0 for an empty one)."""
        if not batch:
            return []
        with torch.inference_mode():
            layers = self.elmo_bilm.encode_words(batch).cpu().numpy()
        ends = numpy.cumsum([len(sentence) for sentence in batch])
        return [numpy.ascontiguousarray(part) for part in numpy.split(layers, ends[:-1], axis=1)]

    def embed_sentences(
        self, sentences: Iterable[List[str]], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> Iterator[numpy.ndarray]:
        """The layers of each sentence, in order, computed `batch_size`
        sentences at a time as the iteration reaches them."""
        sentences = iter(sentences)
        while batch := list(islice(sentences, batch_size)):
            yield from self.embed_batch(batch)

    def embed_file(
        self,
        input_file: Union[IO, FileName],
        output_file_path: FileName,
        output_format: str = "all",
        batch_size: int = DEFAULT_BATCH_SIZE,
        forget_sentences: bool = False,
        use_sentence_keys: bool = False,
    ) -> None:
        """Write the layers of every line of `input_file` (whitespace-tokenised
        UTF-8 text, an open file or a path) to the HDF5 file
        `output_file_path`, one float32 dataset per line, as ``python -m
        spacy_elmo embed`` writes them (`spacy_elmo.embed.embed_file`).

        output_format: "all" ``(n_layers + 1, n_tokens, dim)``, "top" (the last
            layer) or "average" (the layers' mean), each ``(n_tokens, dim)``.
        forget_sentences: leave out the "sentence_to_index" dataset (the JSON
            map from each stripped line to its dataset's name).
        use_sentence_keys: name each dataset by its stripped line instead of
            its line number (no "sentence_to_index"); lines that cannot be
            names (repeated, blank, "." or with "/") are E801.
        """
        lines = input_lines(input_file)
        names = _sentence_keys(lines) if use_sentence_keys else None
        embed_lines(
            self.elmo_bilm,
            lines,
            output_file_path,
            layers=output_format,
            batch_size=batch_size,
            by_length=not self.elmo_bilm.stateful,
            names=names,
            sentence_index=not (forget_sentences or use_sentence_keys),
            overwrite=True,
        )


def model_files(options_file: FileName, weight_file: Optional[FileName] = None) -> Tuple[Path, Optional[Path]]:
    """The local options and weights files for ElmoEmbedder's arguments: a
    catalogue name or URL comes from the cache (downloaded when missing), a
    path stays as it is (E709 when it does not exist)."""
    name = _catalogue_name(options_file)
    weights = None if weight_file is None else _local(weight_file, "weights")
    if name is None:
        return _local(options_file, "options"), weights
    cached = fetch_model(name)
    return cached.options, cached.weights if weights is None else weights


def _local(value: FileName, which: str) -> Path:
    """The local file of a path, or of a catalogue name or URL (its `which` file)."""
    name = _catalogue_name(value)
    if name is None:
        return resolve_model(fspath(value))[0]
    return getattr(fetch_model(name), which)


def _catalogue_name(value: FileName) -> Optional[str]:
    """The catalogue name `value` is, or whose file's URL it is; None for a
    local path (E709 for a URL of no catalogue model)."""
    if not isinstance(value, str):
        return None
    if value in CATALOGUE:
        return value
    if "://" not in value:
        return None
    url = value.replace(OLD_ALLENNLP_ELMO, ALLENNLP_ELMO, 1)
    for model in CATALOGUE.values():
        if url in (file.url for file in model.files):
            return model.name
    raise InputError("E709", found=value, names=", ".join(CATALOGUE))


def _sentence_keys(lines: Sequence[str]) -> List[str]:
    """Each line, stripped, as its dataset's name (E801 where one cannot be)."""
    keys = [line.strip() for line in lines]
    seen: set = set()
    for number, key in enumerate(keys, start=1):
        if not key or key == "." or "/" in key or key in seen:
            raise InputError("E801", found=f"line {number} is {key!r}" + (", a repeat" if key in seen else ""))
        seen.add(key)
    return keys
