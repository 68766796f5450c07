"""`spacy-elmo.ElmoListener.v1`: a task's own view of the shared biLM.

In training the `elmo` component runs the biLM once per batch and hands the
same layers to every listener (`receive`); at prediction a listener reads
``doc._.elmo``. Either way the listener applies its OWN learned mix, so each
task learns which layers it wants from one biLM pass.

A listener never runs the biLM for docs the `elmo` component has not
processed, with one exception: the sample docs its component's
``initialize`` passes it (spaCy initialises the pipeline's components in
turn, and no component has annotated the sample). Anything else without
``doc._.elmo`` is an error (E409), so a pipeline with `elmo` disabled fails
loudly instead of running the biLM inside each downstream component.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.types import Floats2d, Floats3d

from ..errors import ConfigError
from ..extensions import install_extensions
from .bilm import BILM_ARCH_V2
from .scalar_mix import ScalarMix
from .settings import SETTINGS, ConfigSettings, DropoutSettings, check_settings

LISTENER_ARCH = "spacy-elmo.ElmoListener.v1"
STANDALONE_ARCH = "spacy-elmo.ElmoStandalone.v1"
MIX_DOCS_NAME = "elmo-mix-docs"
# The ref under which `mix_docs` keeps its mix: how listeners, `mix-weights`
# and reports find a task's mix, whatever layer it is.
MIX_REF = "mix"
# The ELMo dropout's rate goes by a name of its own: spaCy sets every node's
# "dropout_rate" to [training] dropout at each update (thinc's set_dropout_rate).
ELMO_DROPOUT_NAME = "elmo-dropout"


@registry.architectures(LISTENER_ARCH)
def ElmoListener(
    upstream: str = "*", mix: Optional[Model[Floats3d, Floats2d]] = None, dropout: float = 0.0
) -> Model[List[Doc], List[Floats2d]]:
    """Listen to an `elmo` component and mix its layers for this task.

    upstream: the name of the `elmo` component to listen to, or "*" for any.
    mix: the layer mix, `spacy-elmo.ScalarMix.v1` by default; any Thinc layer
        from the biLM's layers of a batch's tokens, (n_layers, n_tokens, width),
        to one vector per token of the same width, (n_tokens, width). It is
        initialised with a sample of that shape, and the dims `nL` and `nO` it
        declares are set to the biLM's number of layers and width.
    dropout: dropout on the mixed vectors in training, 0 <= dropout < 1; its own
        rate, not [training] dropout (which spaCy sets on the task's other layers).
    """
    check_settings(DropoutSettings, {"dropout": dropout}, LISTENER_ARCH, "the component's [model.tok2vec.elmo]")
    install_extensions()  # the listener reads doc._.elmo, even if no `elmo` component was built
    return ElmoListenerModel(upstream, mix_docs(mix if mix is not None else ScalarMix(), dropout))


@registry.layers("spacy-elmo.mix_docs.v1")
def mix_docs(mix: Model[Floats3d, Floats2d], dropout: float = 0.0) -> Model[List[Floats3d], List[Floats2d]]:
    """Apply `mix` (and dropout) to every doc's layers, as one array for the
    batch. The mix is the model's ref "mix" (`MIX_REF`)."""
    inner = chain(mix, elmo_dropout(dropout)) if dropout else mix
    model = Model(MIX_DOCS_NAME, _mix_docs_forward, layers=[inner], init=_mix_docs_init, dims={"nO": None})
    model.set_ref(MIX_REF, mix)
    return model


def elmo_dropout(rate: float) -> Model[Floats2d, Floats2d]:
    """Dropout on the mixed ELMo vectors at `rate` in training, whatever the
    trainer's own dropout: the listener's `dropout` is the paper's ELMo dropout,
    a setting of its own, so thinc's Dropout (whose "dropout_rate" spaCy
    overwrites with [training] dropout at every update) will not do."""
    return Model(ELMO_DROPOUT_NAME, _elmo_dropout_forward, attrs={SETTINGS: ConfigSettings(rate=rate)})


def _elmo_dropout_forward(model: Model, X: Floats2d, is_train: bool) -> Tuple[Floats2d, Callable]:
    rate = model.attrs[SETTINGS]["rate"]
    if not is_train or not rate:
        return X, lambda dY: dY
    mask = model.ops.get_dropout_mask(X.shape, rate)  # scaled by 1 / (1 - rate)
    return X * mask, lambda dY: dY * mask


def _mix_docs_init(model: Model, X: Optional[List[Floats3d]] = None, Y=None) -> None:
    sample = model.ops.xp.concatenate(X, axis=1) if X else None
    model.layers[0].initialize(X=sample)
    if sample is not None:
        model.set_dim("nO", sample.shape[2], force=True)  # a mix keeps the width


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
    """Receives the `elmo` component's layers for the current batch in training,
    and reads them from ``doc._.elmo`` otherwise.

    Where the layers come from:
    - in training (``is_train`` after the `elmo` component's ``update``): the
      layers it broadcast for this batch (E405 if the docs differ);
    - at prediction: ``doc._.elmo``. A doc without it is an error (E409),
      never a silent run of the biLM here: enable the `elmo` component and
      keep it before this listener's component.
    - during its component's ``initialize``: the sample docs the listener is
      initialised with have not been through the `elmo` component (spaCy
      initialises components one after another and Thinc's `chain` predicts
      the sample layer by layer to infer shapes), so `initialize` runs the
      linked biLM on them once and keeps their layers, for those very doc
      objects only, until the first training batch arrives.
    """

    name = "elmo-listener"

    def __init__(self, upstream_name: str, mixer: Model):
        super().__init__(
            self.name, _listener_forward, init=_listener_init, layers=[mixer], dims={"nO": None, "nL": None}
        )
        self.upstream_name = upstream_name
        self._batch_id: Optional[int] = None
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[Callable] = None
        # The `elmo` component's model, linked when the pipeline is assembled,
        # and the names of that component and of the one this listener is in.
        self.upstream_model: Optional[Model] = None
        self.upstream_component: Optional[str] = None
        self.component: Optional[str] = None
        # The sample docs of `initialize` and their layers (see the class docstring).
        self._init_sample: List[Tuple[Doc, Floats3d]] = []

    @classmethod
    def get_batch_id(cls, docs: List[Doc]) -> int:
        return sum(sum(token.orth for token in doc) for doc in docs)

    def receive(self, batch_id: int, outputs: List[Floats3d], backprop: Callable) -> None:
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop
        self._init_sample = []  # initialisation is over

    def link(
        self, upstream_model: Model, upstream_component: Optional[str] = None, component: Optional[str] = None
    ) -> None:
        """Connect to the `elmo` component's model (`add_listener` calls this,
        with the two components' names for the error messages)."""
        self.upstream_model = upstream_model
        self.upstream_component = upstream_component or self.upstream_component
        self.component = component or self.component
        if upstream_model.has_dim("nL") is True:
            self.set_upstream_dims(upstream_model.get_dim("nL"), upstream_model.get_dim("nO"))

    def set_upstream_dims(self, n_layers: int, width: int) -> None:
        """Called once the upstream biLM is known: the listener's and its
        mix's dims (those the mix declares) follow it."""
        self.set_dim("nL", n_layers, force=True)
        self.set_dim("nO", width, force=True)
        for dim, value in (("nL", n_layers), ("nO", width)):
            if dim in self.mix.dim_names:
                self.mix.set_dim(dim, value, force=True)
        self.layers[0].set_dim("nO", width, force=True)

    @property
    def mix(self) -> Model:
        """The task's layer mix (the ref "mix" of its `mix_docs`)."""
        return self.layers[0].get_ref(MIX_REF)


def _listener_init(model: ElmoListenerModel, X: Optional[List[Doc]] = None, Y=None) -> None:
    if model.upstream_model is not None and model.upstream_model.has_dim("nL") is True:
        model.link(model.upstream_model)
    if model.has_dim("nL") is not True:
        raise ConfigError("E404", component=model.component or "?", upstream=model.upstream_name)
    # The mix learns its shapes from one token's worth of the biLM's layers, as Thinc layers do from data.
    model.layers[0].initialize(X=[model.ops.alloc3f(model.get_dim("nL"), 1, model.get_dim("nO"))])
    # The one place the listener runs the biLM itself: the sample docs of
    # initialisation, which the `elmo` component has not processed.
    sample = [doc for doc in X or [] if doc._.elmo is None]
    layers = model.upstream_model.predict(sample) if sample and model.upstream_model is not None else []
    model._init_sample = list(zip(sample, layers))


def _listener_forward(model: ElmoListenerModel, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    if is_train and model._batch_id is not None:
        if model.get_batch_id(docs) != model._batch_id:
            raise ConfigError("E405", expected=len(model._outputs), found=len(docs))
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
    """The docs' layers from ``doc._.elmo``, or, for the sample docs of
    initialisation only, the layers `_listener_init` computed for them. Any
    other doc without ``doc._.elmo`` is an error (E409)."""
    layers = []
    missing = []
    for doc in docs:
        data = doc._.elmo
        if data is None:
            data = next((out for sample, out in model._init_sample if sample is doc), None)
            if data is None:
                missing.append(doc)
            layers.append(data)
        else:
            layers.append(data.layers)
    if missing:
        upstream = model.upstream_component or (model.upstream_name if model.upstream_name != "*" else "elmo")
        raise ConfigError(
            "E409",
            component=model.component or "?",
            upstream=upstream,
            n_missing=len(missing),
            n_docs=len(docs),
            text=missing[0].text[:40],
        )
    return layers


def replace_listener_cfg(
    bilm_cfg: Dict[str, Any], listener_parent_cfg: Dict[str, Any], *, frozen: bool = False
) -> Dict[str, Any]:
    """The config of a standalone copy (for `nlp.replace_listeners`).

    spaCy passes the downstream component's `model.tok2vec` section; the
    listener is that section itself or one of its subsections. The copy reads
    the sentences the `elmo` component read (`sentences = "upstream"`), not
    those that components between the two set later, and the copy of a
    frozen component's biLM stays frozen in training (`spacy-elmo.BiLM.v2`'s
    `frozen`; the `elmo` component passes its own setting).
    """
    listener_cfg = _find_listener_cfg(listener_parent_cfg)
    return {
        "@architectures": STANDALONE_ARCH,
        "bilm": {**bilm_cfg, "@architectures": BILM_ARCH_V2, "sentences": "upstream", "frozen": frozen},
        "mix": listener_cfg.get("mix", {"@layers": "spacy-elmo.ScalarMix.v1"}),
        "dropout": listener_cfg.get("dropout", 0.0),
    }


def _find_listener_cfg(cfg: Dict[str, Any]) -> Dict[str, Any]:
    if cfg.get("@architectures") == LISTENER_ARCH:
        return cfg
    for value in cfg.values():
        if isinstance(value, dict) and value.get("@architectures") == LISTENER_ARCH:
            return value
    raise ConfigError("E407", found=cfg)


def replace_listener(bilm_copy: Model, listener: ElmoListenerModel, component: Any, *, frozen: bool = False) -> Model:
    """A standalone model: the copied biLM feeding the listener's own trained
    mix, reading the sentences the `elmo` component read and frozen as the
    component was (as its config says, see `replace_listener_cfg`)."""
    bilm_copy.attrs[SETTINGS] = bilm_copy.attrs[SETTINGS].replace(sentences="upstream", frozen=frozen)
    return chain(bilm_copy, listener.layers[0])


class ListenerCopies:
    """What `nlp.replace_listeners` calls on the `elmo` component's model (its
    attrs "replace_listener" and "replace_listener_cfg", as spaCy names them):
    `model` and `cfg` make the copy, frozen as the component is. (Methods of
    an object rather than partial functions: spaCy counts a callback's
    parameters, and a model's attrs must pickle.)"""

    def __init__(self, frozen: bool):
        self.frozen = frozen

    def model(self, bilm_copy: Model, listener: ElmoListenerModel, component: Any) -> Model:
        return replace_listener(bilm_copy, listener, component, frozen=self.frozen)

    def cfg(self, bilm_cfg: Dict[str, Any], listener_parent_cfg: Dict[str, Any]) -> Dict[str, Any]:
        return replace_listener_cfg(bilm_cfg, listener_parent_cfg, frozen=self.frozen)


@registry.architectures(STANDALONE_ARCH)
def ElmoStandalone(
    bilm: Model[List[Doc], List[Floats3d]], mix: Optional[Model[Floats3d, Floats2d]] = None, dropout: float = 0.0
) -> Model[List[Doc], List[Floats2d]]:
    """The biLM owned by one component, with that component's mix (what a
    listener becomes after `nlp.replace_listeners`; its biLM's `sentences` is
    "upstream" then)."""
    check_settings(DropoutSettings, {"dropout": dropout}, STANDALONE_ARCH, "the component's [model.tok2vec.elmo]")
    return chain(bilm, mix_docs(mix if mix is not None else ScalarMix(), dropout))
