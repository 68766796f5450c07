"""`spacy-elmo.BiLM.v1`: the PyTorch biLM as a Thinc model over Docs.

`BiLMModel` is the Thinc model (Docs in, layers per doc out) that wraps
`spacy_elmo.bilm.BiLM`, the PyTorch module, as spacy-transformers'
`TransformerModel` wraps a transformer; pretraining's `PretrainingLM` is a
third thing (a `BiLM` with a softmax, for training only).

Docs are cut into segments by the `segmenter` (models/segmenters.py; by
default the segments the biLM was trained on: sentences when the doc has
sentence boundaries, else windows of `window_size` tokens, and a sentence
longer than that windowed too), the segments are sorted by length and
batched under a budget of `max_batch_tokens` tokens, and the layers
come back as one array (n_layers, n_tokens, width) per doc.

Which sentences (`sentences`): the `elmo` component reads the boundaries the
doc has when it runs ("doc") and records them in ``doc._.elmo``. The copy a
listener becomes after `nlp.replace_listeners` runs later in the pipeline,
where components after `elmo` (a sentencizer, senter or parser) may have set
boundaries the listener never saw; it reads the boundaries `elmo` recorded
("upstream"), and a doc without that record (`elmo` not in the pipeline, or in
training, where `elmo` reads docs that no component has annotated) in windows,
as `elmo` read the docs in training.

The torch module is not known when the model is built (it depends on the
weights the user gives at initialisation): the wrapped module is a placeholder
until `set_bilm` puts a `BiLM` in, or deserialisation restores one. Inside a
saved pipeline the biLM travels as its options and bilm-tf HDF5 weights,
never as a pickle.
"""

import io
import os
from functools import cache, partial
from typing import Callable, List, Optional, Sequence, Tuple

import numpy
import srsly
import torch
from spacy.attrs import ORTH
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3, get_torch_default_device, torch2xp, xp2torch
from thinc.types import Floats3d

from ..bilm import BiLM, BiLMOptions, batch_to_ids
from ..bilm.char_ids import words_with_boundaries
from ..bilm.model import first_token_not_finite
from ..bilm.precision import check_precision
from ..bilm.precision import precision as in_precision
from ..bilm.weights import load_weights, write_weights
from ..device import copied_to_host, to_host
from ..errors import ConfigError, DivergedRunError
from ..extensions import install_extensions
from .segmenters import Segmenter, checked_windows, read_sentences
from .settings import SETTINGS, BiLMSettings, ConfigSettings, check_settings

BILM_ARCH = "spacy-elmo.BiLM.v1"
BILM_ARCH_V2 = "spacy-elmo.BiLM.v2"
# (doc index, start token, end token, first and end token kept): see models/segmenters.py
Segment = Tuple[int, int, int, int, int]


@registry.architectures(BILM_ARCH)
def BiLMModel(
    max_batch_tokens: int = 4096,
    window_size: int = 128,
    precision: str = "fp32",
    sentences: str = "doc",
    segmenter: Optional[Segmenter] = None,
    cuda_graphs: bool = False,
) -> Model[List[Doc], List[Floats3d]]:
    """The biLM over Docs: every token's L + 1 layers, (n_layers, n_tokens, width) per doc.

    max_batch_tokens: at prediction, the most tokens the biLM reads at once
        (sentences go in packed: padding costs neither time nor memory), at
        least `window_size`.
    window_size: the longest segment; docs without sentence boundaries are cut
        into windows of this many tokens (the segmenter's default size).
    precision: "fp32" (exact float32; on a GPU cuDNN's default TF32 convolutions are
        turned off inside the biLM), "tf32" (GPU only), "bf16" (a GPU, or a CPU with AMX
        or AVX-512 BF16), "int8" (the LSTMs' products in int8 on a CPU where that runs at
        least 1.5 times as fast as float32 for this biLM's sizes, else float32 with a warning)
        or "int8-always" (int8 on any CPU); see spacy_elmo.bilm.precision.
    sentences: "doc", read the sentences the doc has (the `elmo` component);
        "upstream", read the sentences the `elmo` component read, as recorded in
        ``doc._.elmo``, and a doc without that record in windows (a listener's
        copy after `nlp.replace_listeners`).
    segmenter: how docs are cut into segments, e.g. `spacy-elmo.sentences.v1`
        (unset: the same) or `spacy-elmo.windows.v1` (windows across sentence
        boundaries, which may overlap); see models/segmenters.py.
    cuda_graphs: at prediction on a GPU, run the LSTMs from CUDA graphs, one per
        bucket of row counts (`BiLM.use_cuda_graphs`, spacy_elmo/bilm/recurrence/graphs.py):
        the same values within float32 rounding, fewer launches from Python,
        each kept graph's GPU memory held. false leaves the biLM as it is (no
        graphs, unless turned on in Python). Nothing changes on a CPU or in training.

    None of these changes the weights, and the config is their one store: a
    saved model's values are not read back, so an override at `spacy.load` or
    an edit of the saved config.cfg is what the model does (see ConfigSettings).
    """
    return _bilm_model(BILM_ARCH, max_batch_tokens, window_size, precision, sentences, segmenter, cuda_graphs)


@registry.architectures(BILM_ARCH_V2)
def BiLMModel_v2(
    max_batch_tokens: int = 4096,
    window_size: int = 128,
    precision: str = "fp32",
    sentences: str = "doc",
    segmenter: Optional[Segmenter] = None,
    cuda_graphs: bool = False,
    frozen: bool = False,
) -> Model[List[Doc], List[Floats3d]]:
    """The biLM over Docs, as `spacy-elmo.BiLM.v1`, with one more setting.

    frozen: in training too, run the biLM without gradients, so that it is never
        updated (what the copy of a frozen `elmo` component's biLM is after
        `nlp.replace_listeners`; the component has its own `frozen` setting).
    """
    return _bilm_model(
        BILM_ARCH_V2, max_batch_tokens, window_size, precision, sentences, segmenter, cuda_graphs, frozen
    )


def _bilm_model(
    name: str,
    max_batch_tokens: int,
    window_size: int,
    precision: str,
    sentences: str,
    segmenter: Optional[Segmenter],
    cuda_graphs: bool,
    frozen: bool = False,
) -> Model[List[Doc], List[Floats3d]]:
    """Either version, its settings checked under its registered `name`."""
    check_settings(
        BiLMSettings,
        {
            "max_batch_tokens": max_batch_tokens,
            "window_size": window_size,
            "sentences": sentences,
            "cuda_graphs": cuda_graphs,
            "frozen": frozen,
        },
        name,
        "[components.elmo.model], or the copy's section after nlp.replace_listeners",
    )
    check_precision(precision)
    install_extensions()  # "upstream" reads doc._.elmo
    _one_torch_thread_in_forked_children()
    wrapper = PyTorchWrapper_v3(
        _Unset(),
        convert_inputs=_convert_inputs,
        convert_outputs=_convert_outputs,
        serialize_model=bilm_to_bytes,
        deserialize_model=bilm_from_bytes,
    )
    return Model(
        "elmo-bilm",
        # The segmenter is a function, which a model's attrs cannot hold (they are serialised).
        partial(forward, segmenter=segmenter if segmenter is not None else read_sentences),
        layers=[wrapper],
        dims={"nO": None, "nL": None},
        attrs={
            SETTINGS: ConfigSettings(
                max_batch_tokens=max_batch_tokens,
                window_size=window_size,
                precision=precision,
                sentences=sentences,
                cuda_graphs=cuda_graphs,
                frozen=frozen,
            )
        },
    )


class _Unset(torch.nn.Module):
    """Stands in for the biLM until weights are loaded."""

    def forward(self, *args, **kwargs):
        raise ConfigError("E403", name="elmo")


def get_bilm(model: Model) -> Optional[BiLM]:
    module = model.layers[0].shims[0]._model
    return module if isinstance(module, BiLM) else None


def set_bilm(model: Model, bilm: BiLM) -> None:
    """Put `bilm` into the Thinc model, on the current Thinc device."""
    model.layers[0].shims[0]._model = bilm.to(get_torch_default_device())
    _set_dims(model, bilm)


def _set_dims(model: Model, bilm: BiLM) -> None:
    for node in (model, model.layers[0]):
        node.set_dim("nO", bilm.output_dim, force=True)
    model.set_dim("nL", bilm.n_layers, force=True)


def bilm_to_bytes(module: torch.nn.Module) -> bytes:
    if not isinstance(module, BiLM):
        return srsly.msgpack_dumps({"options": None})
    weights = io.BytesIO()
    write_weights(module, weights)
    return srsly.msgpack_dumps({"options": module.options.to_allennlp(), "weights": weights.getvalue()})


def bilm_from_bytes(module: torch.nn.Module, data: bytes, device: torch.device) -> torch.nn.Module:
    msg = srsly.msgpack_loads(data)
    if msg["options"] is None:
        return module
    bilm = BiLM(BiLMOptions.from_allennlp(msg["options"], "<pipeline>"))
    load_weights(bilm, io.BytesIO(msg["weights"]), "<pipeline>")
    return bilm.to(device)


def forward(
    model: Model, docs: List[Doc], is_train: bool, *, segmenter: Segmenter = read_sentences
) -> Tuple[List[Floats3d], Callable]:
    wrapper = model.layers[0]
    bilm = get_bilm(model)
    if bilm is None:
        raise ConfigError("E403", name="elmo")
    if model.has_dim("nO") is not True:  # restored from bytes: dims follow the biLM
        _set_dims(model, bilm)
    ops = model.ops
    n_layers, width = bilm.n_layers, bilm.output_dim
    settings = model.attrs[SETTINGS]
    if is_train and settings.get("frozen", False):  # as at prediction, the layers where the model computes
        outputs, _ = forward(model, docs, False, segmenter=segmenter)
        return [ops.asarray3f(layers) for layers in outputs], _no_backprop
    # At prediction the layers go to the host, one copy per batch (see
    # _convert_outputs): docs hold NumPy arrays whatever the device.
    xp = ops.xp if is_train else numpy
    outputs = [xp.zeros((n_layers, len(doc), width), dtype="float32") for doc in docs]
    segments = _segments(docs, segmenter, settings["window_size"], settings["sentences"])
    segments.sort(key=lambda s: s[2] - s[1], reverse=True)
    # In training, one batch: one graph, one backward pass.
    batches = [segments] if is_train else list(_batches(segments, settings["max_batch_tokens"]))
    if not is_train:
        if settings["cuda_graphs"] and bilm.lstm.graphs is None:  # false leaves a choice made in Python
            bilm.use_cuda_graphs()
        return _predict(bilm, docs, batches, outputs, settings["precision"]), _no_backprop
    backprops = []
    for batch in batches:
        words = [[t.text for t in docs[d][start:end]] for d, start, end, _, _ in batch]
        with in_precision(get_torch_default_device(), settings["precision"]):
            layers, backprop = wrapper(batch_to_ids(words, bilm.options.max_characters_per_token), is_train)
        for row, (d, start, _, keep_start, keep_end) in enumerate(batch):
            outputs[d][:, keep_start:keep_end] = layers[:, row, keep_start - start : keep_end - start]
        backprops.append((batch, layers.shape, backprop))

    def backprop_docs(d_outputs: List[Floats3d]) -> List[Doc]:
        for batch, shape, backprop in backprops:
            d_layers = ops.alloc4f(*shape)
            for row, (d, start, _, keep_start, keep_end) in enumerate(batch):
                d_layers[:, row, keep_start - start : keep_end - start] = d_outputs[d][:, keep_start:keep_end]
            backprop(d_layers)
        return docs

    return outputs, backprop_docs


def _predict(
    bilm: BiLM, docs: List[Doc], batches: Sequence[List[Segment]], outputs: List[Floats3d], precision: str
) -> List[Floats3d]:
    """The layers at prediction, from the words (`BiLM.encode_indexed`): each
    doc's ORTH ids in one array, a batch's distinct ids found by NumPy and only
    those looked up as text; one copy to the host per batch, then each
    segment's kept tokens into its doc. On a GPU a batch's layers are copied
    while the next batch computes (`copied_to_host`)."""
    orths = [doc.to_array(ORTH) for doc in docs]
    device = get_torch_default_device()

    def encoded(batch) -> torch.Tensor:
        ids = numpy.concatenate([orths[d][start:end] for d, start, end, _, _ in batch])
        lengths = numpy.fromiter((end - start for _, start, end, _, _ in batch), dtype=numpy.int64, count=len(batch))
        distinct, inverse = numpy.unique(ids, return_inverse=True)
        strings = docs[batch[0][0]].vocab.strings
        if all(docs[d].vocab.strings is strings for d, *_ in batch):
            texts = [strings[orth] for orth in distinct.tolist()]
        else:  # docs of several vocabs: each distinct id's text from a doc that holds it
            first = numpy.unique(ids, return_index=True)[1]
            owners = numpy.repeat([d for d, *_ in batch], lengths)[first]
            texts = [docs[d].vocab.strings[orth] for d, orth in zip(owners.tolist(), distinct.tolist())]
        words, positions = words_with_boundaries(texts)
        with torch.inference_mode(), in_precision(device, precision):
            return bilm.encode_indexed(words, positions[inverse.reshape(-1)], lengths).float()

    for batch, layers in zip(batches, copied_to_host(encoded(batch) for batch in batches)):
        _check_finite(layers, batch, docs)
        offset = 0  # layers: (n_layers, n_tokens, width)
        for d, start, end, keep_start, keep_end in batch:
            outputs[d][:, keep_start:keep_end] = layers[:, offset + keep_start - start : offset + keep_end - start]
            offset += end - start
    return outputs


def _check_finite(layers: numpy.ndarray, batch: List[Segment], docs: List[Doc]) -> None:
    """E535 if a batch's layers (n_layers, n_tokens, width) hold NaN or infinite
    values, naming the doc of the first such token."""
    token = first_token_not_finite(layers)
    if token is None:
        return
    lengths = numpy.cumsum([end - start for _, start, end, _, _ in batch])
    d = batch[int(numpy.searchsorted(lengths, token, side="right"))][0]
    raise DivergedRunError("E535", what=f"the doc {docs[d].text[:60]!r} (and maybe others of its batch)")


def _no_backprop(d_outputs: List[Floats3d]) -> List[Doc]:
    return []


@cache
def _one_torch_thread_in_forked_children() -> None:
    """From now on, run torch on one thread in every process forked from this
    one (as ``nlp.pipe(n_process=N)`` makes them; the N processes make up for
    it). Needed because torch's OpenMP thread pool does not survive a fork:
    the child inherits the pool's state but not its threads, and its first
    parallel op can hang. Registered once, when the first model is built."""
    os.register_at_fork(after_in_child=_one_torch_thread)


def _one_torch_thread() -> None:
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def sentence_starts(doc: Doc, sentences: str = "doc") -> List[int]:
    """The tokens where the biLM starts reading a sentence of `doc` (before
    long sentences are cut into windows): [0] for a doc read as one text,
    [] for an empty doc. `sentences` as `BiLMModel` takes it."""
    if not len(doc):
        return []
    if sentences == "upstream":
        data = doc._.elmo  # checked: E410 if the doc was retokenized since
        recorded = getattr(data, "sentence_starts", None)
        return [0] if recorded is None else [int(i) for i in recorded]
    if doc.has_annotation("SENT_START"):  # half the time of reading them from an array for most docs
        return [sent.start for sent in doc.sents]
    return [0]


def _segments(docs: List[Doc], segmenter: Segmenter, window_size: int, sentences: str = "doc") -> List[Segment]:
    """Token ranges the biLM reads as sentences, as `segmenter` cuts each doc
    (given the sentences `sentence_starts` reads), each token kept from
    exactly one (checked: E412; not for the default segmenter over the doc's
    own sentences, whose windows are valid by construction)."""
    if segmenter is read_sentences and sentences == "doc":
        return [
            (d, *window)
            for d, doc in enumerate(docs)
            for window in read_sentences(doc, sentence_starts(doc, sentences), window_size)
        ]
    return [
        (d, *window)
        for d, doc in enumerate(docs)
        for window in checked_windows(segmenter, doc, sentence_starts(doc, sentences), window_size)
    ]


def _batches(segments: List[Segment], max_tokens: int):
    """Consecutive runs of (length-sorted) segments of at most `max_tokens`
    tokens in all (a segment longer than that alone)."""
    batch: List[Segment] = []
    n_tokens = 0
    for segment in segments:
        length = segment[2] - segment[1]
        if batch and n_tokens + length > max_tokens:
            yield batch
            batch, n_tokens = [], 0
        batch.append(segment)
        n_tokens += length
    if batch:
        yield batch


def _convert_inputs(model: Model, char_ids: torch.Tensor, is_train: bool):
    device = get_torch_default_device()
    return ArgsKwargs(args=(char_ids.to(device),), kwargs={}), lambda d_inputs: None


def _convert_outputs(model: Model, inputs_outputs, is_train: bool):
    _, output = inputs_outputs
    layers = output.layers
    if not is_train:  # one device-to-host copy for the whole batch
        return to_host(layers.float()), None

    def get_d_layers(d_layers) -> ArgsKwargs:
        return ArgsKwargs(args=(layers,), kwargs={"grad_tensors": xp2torch(d_layers)})

    return torch2xp(layers), get_d_layers
