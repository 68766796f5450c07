"""The output layer both language models share: exact log-probabilities of words.

``full``: one linear layer and a softmax over the whole vocabulary.
``adaptive``: PyTorch's adaptive softmax (Grave et al. 2017): frequent words in
a head, rarer ones in tail clusters of smaller dimension reached through a
cluster entry of the head. Still an exact, normalised distribution over the
whole vocabulary (the probability of a tail word is that of its cluster times
its probability within it), only cheaper for large vocabularies.

``[softmax] @pretrain_softmaxes = "spacy-elmo.AdaptiveSoftmax.v1"`` (or
``"spacy-elmo.FullSoftmax.v1"``) names a function of
``registry.pretrain_softmaxes`` (training/registry.py); called with the section's settings, it returns a
`SoftmaxFactory`: (input dimension, vocabulary size) -> the head.

Saved as HDF5 (``softmax.hdf5``): one dataset per parameter under its
``state_dict`` name, the settings as attributes.
"""
from pathlib import Path
from functools import partial
from typing import Callable, List, Sequence, Union

import h5py
import numpy
import torch
from torch import nn
from torch.nn import functional as F

from ...disk import hdf5_writer, writing
from ...errors import DamagedFileError
from ...util import atomic_path
from ..registry import registry


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
        try:
            with h5py.File(path, "r") as f:
                head = cls(
                    in_dim=int(f.attrs["in_dim"]),
                    n_classes=int(f.attrs["n_classes"]),
                    kind=str(f.attrs["kind"]),
                    cutoffs=[int(c) for c in f.attrs["cutoffs"]],
                    div_value=float(f.attrs["div_value"]),
                )
                state = {}
                for name, target in head.state_dict().items():
                    if name not in f or tuple(f[name].shape) != tuple(target.shape):
                        found = tuple(f[name].shape) if name in f else "nothing"
                        raise DamagedFileError(
                            "E305", path=path, name=name, expected=tuple(target.shape), found=found
                        )
                    state[name] = torch.from_numpy(numpy.asarray(f[name][...], dtype=numpy.float32))
        except (OSError, KeyError) as err:
            raise DamagedFileError("E304", path=path, reason=err) from err
        head.load_state_dict(state)
        return head

    def same_shape(self, other: "SoftmaxHead") -> bool:
        return (self.kind, self.in_dim, self.n_classes, self.cutoffs, self.div_value) == (
            other.kind, other.in_dim, other.n_classes, other.cutoffs, other.div_value
        )


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


@registry.pretrain_softmaxes("spacy-elmo.FullSoftmax.v1")
def full(div_value: float) -> SoftmaxFactory:
    # div_value does nothing here; it is kept in softmax.hdf5 as it always was, so
    # that a full head saved earlier still matches a new one (`same_shape`).
    return partial(SoftmaxHead, kind="full", div_value=div_value)


@registry.pretrain_softmaxes("spacy-elmo.AdaptiveSoftmax.v1")
def adaptive(cutoffs: List[int], div_value: float) -> SoftmaxFactory:
    """Cutoffs at or above the vocabulary size are dropped; with none left, the head is a full one."""
    return partial(SoftmaxHead, kind="adaptive", cutoffs=cutoffs, div_value=div_value)
