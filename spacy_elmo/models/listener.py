"""`spacy-elmo.ElmoListener.v1`: a task's own view of the shared biLM.

In training the `elmo` component runs the biLM once per batch and hands the
same layers to every listener (`receive`); at prediction a listener reads
``doc._.elmo``. Either way the listener applies its OWN learned mix, so each
task learns which layers it wants from one biLM pass.
"""
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Model, chain
from thinc.types import Floats2d, Floats3d

from ..errors import ElmoError, Errors
from .scalar_mix import SCALAR_MIX_NAME, ScalarMix

LISTENER_ARCH = "spacy-elmo.ElmoListener.v1"


@registry.architectures(LISTENER_ARCH)
def ElmoListener(
    upstream: str = "*", mix: Optional[Model[Floats3d, Floats2d]] = None, dropout: float = 0.0
) -> Model[List[Doc], List[Floats2d]]:
    """Listen to an `elmo` component and mix its layers for this task.

    upstream: the name of the `elmo` component to listen to, or "*" for any.
    mix: the layer mix, `spacy-elmo.ScalarMix.v1` by default.
    dropout: dropout on the mixed vectors in training.
    """
    return ElmoListenerModel(upstream, mix_docs(mix if mix is not None else ScalarMix(), dropout))


@registry.layers("spacy-elmo.mix_docs.v1")
def mix_docs(mix: Model[Floats3d, Floats2d], dropout: float = 0.0) -> Model[List[Floats3d], List[Floats2d]]:
    """Apply `mix` (and dropout) to every doc's layers, as one array for the batch."""
    inner = chain(mix, Dropout(dropout)) if dropout else mix
    return Model("elmo-mix-docs", _mix_docs_forward, layers=[inner], init=_mix_docs_init, dims={"nO": None})


def _mix_docs_init(model: Model, X: Optional[List[Floats3d]] = None, Y=None) -> None:
    inner = model.layers[0]
    sample = model.ops.xp.concatenate(X, axis=1) if X else None
    inner.initialize(X=sample)
    mix = next(node for node in inner.walk() if node.name == SCALAR_MIX_NAME)
    model.set_dim("nO", mix.get_dim("nO"), force=True)


def _mix_docs_forward(model: Model, X: List[Floats3d], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    ops = model.ops
    lengths = [x.shape[1] for x in X]
    if not X or sum(lengths) == 0:
        width = model.get_dim("nO")
        return [ops.alloc2f(n, width) for n in lengths], lambda dY: [ops.alloc3f(*x.shape) for x in X]
    if all(isinstance(x, numpy.ndarray) for x in X):  # from doc._.elmo: one copy to the device
        stacked = ops.asarray(numpy.concatenate(X, axis=1), dtype="float32")
    else:
        stacked = ops.xp.concatenate([ops.asarray(x, dtype="float32") for x in X], axis=1)
    Y, backprop = model.layers[0](stacked, is_train)
    splits = ops.xp.cumsum(ops.asarray1i(lengths))[:-1].tolist()

    def backprop_docs(dY: List[Floats2d]) -> List[Floats3d]:
        d_stacked = backprop(ops.xp.concatenate(dY, axis=0))
        return ops.xp.split(d_stacked, splits, axis=1)

    return ops.xp.split(Y, splits, axis=0), backprop_docs


class ElmoListenerModel(Model):
    """Receives the `elmo` component's layers for the current batch in training."""

    name = "elmo-listener"

    def __init__(self, upstream_name: str, mixer: Model):
        super().__init__(self.name, _listener_forward, init=_listener_init, layers=[mixer], dims={"nO": None, "nL": None})
        self.upstream_name = upstream_name
        self._batch_id: Optional[int] = None
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[Callable] = None
        # The `elmo` component's model, linked when the pipeline is assembled.
        self.upstream_model: Optional[Model] = None

    @classmethod
    def get_batch_id(cls, docs: List[Doc]) -> int:
        return sum(sum(token.orth for token in doc) for doc in docs)

    def receive(self, batch_id: int, outputs: List[Floats3d], backprop: Callable) -> None:
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop

    def link(self, upstream_model: Model) -> None:
        """Connect to the `elmo` component's model (`add_listener` calls this)."""
        self.upstream_model = upstream_model
        if upstream_model.has_dim("nL") is True:
            self.set_upstream_dims(upstream_model.get_dim("nL"), upstream_model.get_dim("nO"))

    def set_upstream_dims(self, n_layers: int, width: int) -> None:
        """Called once the upstream biLM is known."""
        self.set_dim("nL", n_layers, force=True)
        self.set_dim("nO", width, force=True)
        for node in self.layers[0].walk():
            if node.name == SCALAR_MIX_NAME:
                node.set_dim("nL", n_layers, force=True)
                node.set_dim("nO", width, force=True)
        self.layers[0].set_dim("nO", width, force=True)

    @property
    def mix(self) -> Model:
        return next(node for node in self.walk() if node.name == SCALAR_MIX_NAME)


def _listener_init(model: ElmoListenerModel, X=None, Y=None) -> None:
    if model.upstream_model is not None and model.upstream_model.has_dim("nL") is True:
        model.link(model.upstream_model)
    if model.has_dim("nL") is not True:
        raise ElmoError("E404", Errors.E404.format(component="?", upstream=model.upstream_name))
    model.layers[0].initialize()


def _listener_forward(model: ElmoListenerModel, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    if is_train and model._batch_id is not None:
        if model.get_batch_id(docs) != model._batch_id:
            raise ElmoError("E405", Errors.E405.format(expected=len(model._outputs), found=len(docs)))
        Y, backprop_mix = model.layers[0](model._outputs, is_train)
        backprop_upstream = model._backprop
        model._batch_id = model._outputs = model._backprop = None

        def backprop(dY: List[Floats2d]) -> List[Doc]:
            backprop_upstream(backprop_mix(dY))
            return []

        return Y, backprop
    Y, _ = model.layers[0](_read_layers(model, docs), is_train)
    return Y, lambda dY: []


def _read_layers(model: ElmoListenerModel, docs: List[Doc]) -> List[Floats3d]:
    """The docs' layers from ``doc._.elmo``. A doc the `elmo` component has not
    processed (e.g. during initialisation) is run through the linked biLM."""
    missing = [i for i, doc in enumerate(docs) if doc._.elmo is None]
    computed = {}
    if missing:
        if model.upstream_model is None:
            raise ElmoError("E402", Errors.E402.format(text=docs[missing[0]].text[:40]))
        outputs = model.upstream_model.predict([docs[i] for i in missing])
        computed = dict(zip(missing, outputs))
    return [computed[i] if i in computed else doc._.elmo.layers for i, doc in enumerate(docs)]


def replace_listener_cfg(bilm_cfg: Dict[str, Any], listener_parent_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The config of a standalone copy (for `nlp.replace_listeners`).

    spaCy passes the downstream component's `model.tok2vec` section; the
    listener is that section itself or one of its subsections.
    """
    listener_cfg = _find_listener_cfg(listener_parent_cfg)
    return {
        "@architectures": "spacy-elmo.ElmoStandalone.v1",
        "bilm": bilm_cfg,
        "mix": listener_cfg.get("mix", {"@layers": "spacy-elmo.ScalarMix.v1"}),
        "dropout": listener_cfg.get("dropout", 0.0),
    }


def _find_listener_cfg(cfg: Dict[str, Any]) -> Dict[str, Any]:
    if cfg.get("@architectures") == LISTENER_ARCH:
        return cfg
    for value in cfg.values():
        if isinstance(value, dict) and value.get("@architectures") == LISTENER_ARCH:
            return value
    raise ElmoError("E407", Errors.E407.format(found=cfg))


def replace_listener(bilm_copy: Model, listener: ElmoListenerModel, component: Any) -> Model:
    """A standalone model: the copied biLM feeding the listener's own trained mix."""
    return chain(bilm_copy, listener.layers[0])


@registry.architectures("spacy-elmo.ElmoStandalone.v1")
def ElmoStandalone(
    bilm: Model[List[Doc], List[Floats3d]], mix: Optional[Model[Floats3d, Floats2d]] = None, dropout: float = 0.0
) -> Model[List[Doc], List[Floats2d]]:
    """The biLM owned by one component, with that component's mix (what a
    listener becomes after `nlp.replace_listeners`)."""
    return chain(bilm, mix_docs(mix if mix is not None else ScalarMix(), dropout))
