"""The output layer both language models share: exact log-probabilities of words.

``full``: one linear layer and a softmax over the whole vocabulary.
``adaptive``: PyTorch's adaptive softmax (Grave et al. 2017): frequent words in
a head, rarer ones in tail clusters of smaller dimension reached through a
cluster entry of the head. Still an exact, normalised distribution over the
whole vocabulary (the probability of a tail word is that of its cluster times
its probability within it), only cheaper for large vocabularies.

``[softmax] @pretrain_softmaxes = "spacy-elmo.AdaptiveSoftmax.v1"`` (or
``"spacy-elmo.FullSoftmax.v1"``) names a function of
``registry.pretrain_softmaxes`` (training/registry.py); the section's other
settings are its arguments, and it returns a `SoftmaxFactory`: (input
dimension, vocabulary size) -> the head.

Saved as HDF5 (``softmax.hdf5``): one dataset per parameter under its
``state_dict`` name, the settings as attributes. Loading checks the settings,
and the datasets' shapes against them, before anything is built.
"""
import math
from pathlib import Path
from functools import partial
from typing import Annotated, Any, Callable, Dict, List, Sequence, Tuple, Union

import h5py
import numpy
import torch
from confection import SimpleFrozenList
from pydantic import AfterValidator, Field
from torch import nn
from torch.nn import functional as F

from ...disk import hdf5_writer, writing
from ...errors import DamagedFileError
from ...util import atomic_path
from ..registry import registry

KINDS = ("full", "adaptive")


class SoftmaxHead(nn.Module):
    def __init__(
        self, in_dim: int, n_classes: int, kind: str = "full", cutoffs: Sequence[int] = (), div_value: float = 4.0
    ):
        super().__init__()
        self.in_dim = in_dim
        self.n_classes = n_classes
        self.cutoffs: List[int] = [int(c) for c in cutoffs if c < n_classes] if kind == "adaptive" else []
        # An adaptive softmax with no cutoff below the vocabulary size is a full one.
        self.kind = "adaptive" if self.cutoffs else "full"
        self.div_value = float(div_value)
        if self.kind == "adaptive":
            self.adaptive = nn.AdaptiveLogSoftmaxWithLoss(
                in_dim, n_classes, self.cutoffs, div_value=self.div_value, head_bias=True
            )
        else:
            self.linear = nn.Linear(in_dim, n_classes)

    def target_log_prob(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """hidden: (n, in_dim); targets: (n,) -> (n,) log p(target | hidden), float32
        (float64 for a float64 head).

        The same as ``nn.AdaptiveLogSoftmaxWithLoss(hidden, targets).output``
        (and the same parameters), computed with `target_log_softmax`, which
        neither writes every word's log-probability nor needs zeros to scatter
        the targets' gradients into; it also runs under autocast, the products
        in bfloat16 and the softmax in float32.
        """
        if self.kind == "full":
            return target_log_softmax(self.linear(hidden), targets)
        adaptive = self.adaptive
        shortlist = adaptive.shortlist_size
        # A target in a tail cluster is reached through the cluster's entry in the head.
        cluster = torch.bucketize(targets, targets.new_tensor(adaptive.cutoffs), right=True)  # 0: the head
        head_targets = torch.where(cluster == 0, targets, shortlist + cluster - 1)
        log_probs = target_log_softmax(adaptive.head(hidden), head_targets)
        for i, tail in enumerate(adaptive.tail):
            rows = (cluster == i + 1).nonzero().squeeze(1)
            if len(rows):
                within = target_log_softmax(tail(hidden[rows]), targets[rows] - adaptive.cutoffs[i])
                log_probs = log_probs.index_add(0, rows, within)
        return log_probs

    def log_prob(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden: (n, in_dim) -> (n, n_classes), the log-probabilities of every word."""
        if self.kind == "adaptive":
            return self.adaptive.log_prob(hidden)
        return F.log_softmax(self.linear(hidden), dim=-1)

    def save(self, path: Union[str, Path], dtype: str = "float32") -> None:
        """Write the softmax to `path` (HDF5), its weights as `dtype` ("float32" or
        "float16"; `load` reads either as float32). A full or read-only disk is
        a coded error (E513, E514), and no temporary file is left."""
        from ...bilm.weights import as_storage, storage_dtype

        storage = storage_dtype(dtype)
        with writing(path), atomic_path(path) as tmp, hdf5_writer(tmp, path) as (f, check):
            f.attrs["kind"] = self.kind
            f.attrs["in_dim"] = self.in_dim
            f.attrs["n_classes"] = self.n_classes
            f.attrs["cutoffs"] = numpy.asarray(self.cutoffs, dtype=numpy.int64)
            f.attrs["div_value"] = self.div_value
            for name, tensor in self.state_dict().items():
                f.create_dataset(name, data=as_storage(tensor.detach().float().cpu().numpy(), storage, name))
                check()

    @classmethod
    def load(cls, path: Union[str, Path]) -> "SoftmaxHead":
        """The head saved in `path` by `save`. Its settings (E325) and the
        shapes of its datasets (E305) are checked before anything is built,
        so a damaged file costs no memory; a file HDF5 cannot read is E304."""
        try:
            with h5py.File(path, "r") as f:
                settings = _settings(f.attrs, path)
                state = {name: _dataset(f, name, shape, path) for name, shape in parameter_shapes(**settings).items()}
        except OSError as err:
            raise DamagedFileError("E304", path=path, reason=err) from err
        with torch.device("meta"):  # the modules' structure, with no memory behind it
            head = cls(**settings)
        head.load_state_dict(state, assign=True)
        return head

    def same_shape(self, other: "SoftmaxHead") -> bool:
        return (self.kind, self.in_dim, self.n_classes, self.cutoffs, self.div_value) == (
            other.kind, other.in_dim, other.n_classes, other.cutoffs, other.div_value
        )


def parameter_shapes(
    in_dim: int, n_classes: int, kind: str, cutoffs: Sequence[int], div_value: float
) -> Dict[str, Tuple[int, ...]]:
    """The shape of each parameter (by its ``state_dict`` name) of the head
    with these settings, as torch's modules build them, without building them."""
    if kind == "full":
        return {"linear.weight": (n_classes, in_dim), "linear.bias": (n_classes,)}
    head_size = cutoffs[0] + len(cutoffs)  # the shortlist, and an entry for each tail cluster
    shapes = {"adaptive.head.weight": (head_size, in_dim), "adaptive.head.bias": (head_size,)}
    bounds = [*cutoffs, n_classes]
    for i in range(len(cutoffs)):
        hidden = int(in_dim // div_value ** (i + 1))
        shapes[f"adaptive.tail.{i}.0.weight"] = (hidden, in_dim)
        shapes[f"adaptive.tail.{i}.1.weight"] = (bounds[i + 1] - bounds[i], hidden)
    return shapes


def _settings(attrs: Any, path: Union[str, Path]) -> Dict[str, Any]:
    """The settings `SoftmaxHead.save` writes as attributes, each checked; E325 names the first that is wrong."""

    def wrong(name: str, expected: str) -> DamagedFileError:
        return DamagedFileError("E325", path=path, field=f"the attribute '{name}'", found=_shown(attrs.get(name)),
                                expected=expected)

    kind = attrs.get("kind")
    if not (isinstance(kind, str) and kind in KINDS):
        raise wrong("kind", " or ".join(map(repr, KINDS)))
    sizes = {name: attrs.get(name) for name in ("in_dim", "n_classes")}
    for name, value in sizes.items():
        if not (_is_integer(value) and value >= 1):
            raise wrong(name, "a whole number from 1 up")
    cutoffs = numpy.asarray(attrs.get("cutoffs"))
    rising = cutoffs.ndim == 1 and cutoffs.dtype.kind in "iu" and all(numpy.diff(cutoffs) > 0)
    if kind == "full" and not (rising and cutoffs.size == 0):
        raise wrong("cutoffs", "none: a full softmax has no clusters")
    if kind == "adaptive" and not (rising and cutoffs.size and cutoffs[0] >= 1 and cutoffs[-1] < sizes["n_classes"]):
        raise wrong("cutoffs", f"whole numbers rising from 1 to below n_classes ({sizes['n_classes']}), at least one")
    div_value = attrs.get("div_value")
    if not (_is_number(div_value) and math.isfinite(div_value) and div_value > 0):
        raise wrong("div_value", "a number above 0")
    return {"in_dim": int(sizes["in_dim"]), "n_classes": int(sizes["n_classes"]), "kind": kind,
            "cutoffs": [int(c) for c in cutoffs], "div_value": float(div_value)}


def _dataset(f: h5py.File, name: str, shape: Tuple[int, ...], path: Union[str, Path]) -> torch.Tensor:
    """The parameter `name` from its dataset, as float32, once its shape is
    `shape` (E305) and it holds floating-point numbers (E325)."""
    dataset = f.get(name)
    found = tuple(dataset.shape) if isinstance(dataset, h5py.Dataset) else "nothing"
    if found != shape:
        raise DamagedFileError("E305", path=path, name=name, expected=shape, found=found)
    if dataset.dtype.kind != "f":
        raise DamagedFileError("E325", path=path, field=f"the dataset '{name}'", found=f"of type {dataset.dtype}",
                               expected="floating-point numbers")
    return torch.from_numpy(numpy.asarray(dataset[...], dtype=numpy.float32))


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, numpy.integer)) and not isinstance(value, (bool, numpy.bool_))


def _is_number(value: Any) -> bool:
    return _is_integer(value) or isinstance(value, (float, numpy.floating))


def _shown(value: Any) -> str:
    """An attribute's value as the message shows it."""
    if value is None:
        return "missing"
    if isinstance(value, (numpy.ndarray, numpy.generic)):
        value = value.tolist()
    return repr(value)


def target_log_softmax(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log_softmax(logits)[row, targets[row]] for each row: (n, k), (n,) -> (n,), in
    float32 (float64 for float64 logits).

    ``-F.cross_entropy(logits, targets, reduction="none")``, in fewer passes
    over the (n, k) logits and with no (n, k) buffer of zeros: the backward
    pass turns the log-softmax the forward pass kept, in place, into the
    gradient (``softmax(logits)`` times minus the incoming gradient, plus it at
    each target), so a second backward pass through it is refused.
    """
    return _TargetLogSoftmax.apply(logits if logits.dtype == torch.float64 else logits.float(), targets)


class _TargetLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets):
        log_probs = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(log_probs, targets)
        return log_probs.gather(1, targets.unsqueeze(1)).squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        log_probs, targets = ctx.saved_tensors
        # d log_softmax(logits)[t] / d logits = onehot(t) - softmax(logits)
        d_logits = log_probs.exp_().mul_(-grad.unsqueeze(1))
        d_logits[torch.arange(len(targets), device=targets.device), targets] += grad
        return d_logits, None


SoftmaxFactory = Callable[[int, int], SoftmaxHead]


def _rising(cutoffs: List[int]) -> List[int]:
    if any(b <= a for a, b in zip(cutoffs, cutoffs[1:])) or any(c < 1 for c in cutoffs):
        raise ValueError("must be positive and increasing")
    return cutoffs


Cutoffs = Annotated[List[int], AfterValidator(_rising)]
DivValue = Annotated[float, Field(ge=1)]


@registry.pretrain_softmaxes("spacy-elmo.FullSoftmax.v1")
def full(div_value: DivValue = 4.0) -> SoftmaxFactory:
    """One linear layer over the whole vocabulary. `div_value` shapes no part of
    it; softmax.hdf5 records it, and `same_shape` compares it."""
    return partial(SoftmaxHead, kind="full", div_value=div_value)


@registry.pretrain_softmaxes("spacy-elmo.AdaptiveSoftmax.v1")
def adaptive(cutoffs: Cutoffs = SimpleFrozenList([4000, 20000]), div_value: DivValue = 4.0) -> SoftmaxFactory:
    """Cutoffs at or above the vocabulary size are dropped; with none left, the head is a full one.

    cutoffs: the word ids at which the head's shortlist and each tail cluster but the last end.
    div_value: tail cluster i (from 1) projects to the input dimension over div_value ** i.
    """
    return partial(SoftmaxHead, kind="adaptive", cutoffs=cutoffs, div_value=div_value)
