"""The `elmo` pipeline component: runs the biLM and shares its layers."""

import warnings
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

import numpy
import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate
from thinc.types import Floats3d

from ..bilm import BiLM
from ..data_classes import ElmoDocData
from ..disk import writing
from ..errors import ConfigError, DamagedFileError, DivergedRunError, ElmoError, Warnings
from ..extensions import fixed_mix_weights, install_extensions, set_vector_hooks, token_offsets
from ..models.bilm import get_bilm, sentence_starts, set_bilm
from ..models.listener import ElmoListenerModel, ListenerCopies
from ..models.settings import SETTINGS, check_component_settings
from ..util import atomic_path
from .layer_cache import LayerCache, as_stored

DEFAULT_CONFIG = {
    "model": {"@architectures": "spacy-elmo.BiLM.v1", "max_batch_tokens": 4096, "window_size": 128},
    "frozen": True,
    "store_dtype": "float32",
    "vector_mix": "average",
    "set_vector_hooks": False,
    "train_cache_mb": 1024,
}


@Language.factory("elmo", assigns=["doc._.elmo"], default_config=DEFAULT_CONFIG)
def make_elmo(
    nlp: Language,
    name: str,
    model: Model[List[Doc], List[Floats3d]],
    frozen: bool,
    store_dtype: str,
    vector_mix: Union[str, int, List[float]],
    set_vector_hooks: bool,
    train_cache_mb: int,
) -> "Elmo":
    """Create an `elmo` component. The biLM weights are read at initialisation
    (`[initialize.components.elmo]` options_file and weights_file)."""
    return Elmo(
        nlp.vocab,
        model,
        name,
        frozen=frozen,
        store_dtype=store_dtype,
        vector_mix=vector_mix,
        set_vector_hooks=set_vector_hooks,
        train_cache_mb=train_cache_mb,
    )


class Elmo(TrainablePipe):
    """Run a biLM over docs, store all its layers in ``doc._.elmo``, and share
    them with the listeners of downstream components in training.

    Frozen (the default), the biLM runs without gradients once per batch and
    its outputs for a doc seen before come from a cache; its backprop does
    nothing. Not frozen, the listeners' gradients fine-tune it, with one
    backward pass per batch.

    store_dtype "float16" halves the memory of ``doc._.elmo``; a doc whose
    layers hold a value beyond float16's range (65,504), which would be stored
    as inf, keeps float32 layers instead, with a warning (W001).

    The settings are the factory's arguments, kept as attributes and nowhere
    else: `nlp.config` is what the component does, and a saved pipeline holds
    only the biLM's weights besides its config.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], List[Floats3d]],
        name: str = "elmo",
        *,
        frozen: bool = True,
        store_dtype: str = "float32",
        vector_mix: Union[str, int, List[float]] = "average",
        set_vector_hooks: bool = False,
        train_cache_mb: int = 1024,
    ):
        self.vocab = vocab
        self.model = model
        self.name = name
        self.listener_map: Dict[str, List[Model]] = {}
        check_component_settings(
            {
                "frozen": frozen,
                "store_dtype": store_dtype,
                "vector_mix": vector_mix,
                "set_vector_hooks": set_vector_hooks,
                "train_cache_mb": train_cache_mb,
            },
            name,
        )
        self.frozen = frozen
        self.store_dtype = store_dtype
        self.vector_mix = vector_mix
        self.set_vector_hooks = set_vector_hooks
        self.train_cache = LayerCache(train_cache_mb * 2**20, store_dtype)
        # A listener's copy (nlp.replace_listeners) stays frozen if this component is.
        copies = ListenerCopies(frozen)
        self.model.attrs["replace_listener"] = copies.model
        self.model.attrs["replace_listener_cfg"] = copies.cfg
        install_extensions()

    # The listener protocol (as spaCy's tok2vec speaks it).

    @property
    def listeners(self) -> List[Model]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: Model, component_name: str) -> None:
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        listener.link(self.model, upstream_component=self.name, component=component_name)

    def remove_listener(self, listener: Model, component_name: str) -> bool:
        if component_name in self.listener_map and listener in self.listener_map[component_name]:
            # A new list, not the old one changed: `nlp.replace_listeners` removes a
            # component's listeners one by one while it walks the list it was given.
            self.listener_map[component_name] = [m for m in self.listener_map[component_name] if m is not listener]
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component: Any) -> None:
        """Register the ELMo listeners in `component`'s model that listen to us."""
        names = ("*", self.name)
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, ElmoListenerModel) and node.upstream_name in names:
                    self.add_listener(node, component.name)

    # Prediction.

    def predict(self, docs: Iterable[Doc]) -> List[Floats3d]:
        """Every token's L + 1 layers, (n_layers, n_tokens, width) per doc."""
        docs = list(docs)
        if not docs:
            return []
        return self.model.predict(docs)

    def set_annotations(self, docs: Iterable[Doc], outputs: List[Floats3d]) -> None:
        """Store the layers as ``doc._.elmo``."""
        bilm = self._require_bilm()
        mix = fixed_mix_weights(self.vector_mix, bilm.n_layers)
        sentences = self.model.attrs[SETTINGS]["sentences"]
        for doc, layers in zip(docs, self._in_store_dtype(outputs)):
            doc._.elmo = ElmoDocData(
                layers=layers,
                mix=numpy.asarray(mix, dtype="float32"),
                vector_hooks=self.set_vector_hooks,
                token_offsets=token_offsets(doc),
                sentence_starts=numpy.asarray(sentence_starts(doc, sentences), dtype="int32"),
            )
            if self.set_vector_hooks:
                set_vector_hooks(doc)

    def _in_store_dtype(self, outputs: List[Floats3d]) -> List[Floats3d]:
        """Each doc's layers in `store_dtype`, but float32 for a doc whose
        values float16 cannot hold (never inf), with one warning (W001)."""
        stored = [as_stored(layers, self.store_dtype) for layers in outputs]
        kept_float32 = [layers for layers, (_, too_large) in zip(outputs, stored) if too_large]
        if kept_float32:
            largest = max(float(numpy.abs(layers).max()) for layers in kept_float32)
            warnings.warn(
                Warnings.W001.format(
                    n_docs=len(kept_float32),
                    batch=len(outputs),
                    largest=largest,
                    name=self.name,
                ),
                stacklevel=3,
            )
        return [layers for layers, _ in stored]

    # Training.

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Run the biLM on the batch and hand its layers to every listener.

        Every listener's callback accumulates its gradient. The listeners of
        the last listening component, updated last, share one more duty: the
        callback that completes their set runs the biLM's backward pass (when
        not frozen) and the optimiser step. A component may hold several
        listeners (`ElmoTok2Vec.v2`'s `output_elmo`), whose gradients arrive
        in whatever order its model backpropagates.
        """
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        validate_examples(examples, "Elmo.update")
        docs = [eg.predicted for eg in examples]
        if self.frozen:
            outputs = self._frozen_outputs(docs)
            bp_outputs: Optional[Callable] = None
        else:
            set_dropout_rate(self.model, drop)
            outputs, bp_outputs = self.model.begin_update(docs)
            xp = self.model.ops.xp
            diverged = next((doc for doc, layers in zip(docs, outputs) if not bool(xp.isfinite(layers).all())), None)
            if diverged is not None:  # (at prediction the model itself checks: models/bilm.py)
                raise DivergedRunError("E535", what=f"the doc {diverged.text[:60]!r} in training")
        d_outputs = [self.model.ops.alloc3f(*x.shape) for x in outputs] if bp_outputs else []

        def accumulate_gradient(one_d_outputs: List[Floats3d]) -> None:
            for d_total, d_one in zip(d_outputs, one_d_outputs):
                d_total += d_one

        last = self.listener_map[self.listening_components[-1]] if self.listener_map else []
        waiting = {id(listener) for listener in last}

        def backprop_when_complete(listener: Model) -> Callable[[List[Floats3d]], List[Doc]]:
            def backprop(one_d_outputs: List[Floats3d]) -> List[Doc]:
                if bp_outputs is None:
                    return []
                accumulate_gradient(one_d_outputs)
                waiting.discard(id(listener))
                if not waiting:
                    bp_outputs(d_outputs)
                    if sgd is not None:
                        self.finish_update(sgd)
                return []

            return backprop

        batch_id = ElmoListenerModel.get_batch_id(docs)
        for listener in self.listeners:
            if any(listener is other for other in last):
                listener.receive(batch_id, outputs, backprop_when_complete(listener))
            else:
                listener.receive(batch_id, outputs, accumulate_gradient if bp_outputs else _no_backprop)
        return losses

    def _frozen_outputs(self, docs: List[Doc]) -> List[Floats3d]:
        """The biLM's layers for docs, from the cache where seen before (by this biLM)."""
        self.train_cache.bind(self._require_bilm())
        keys = [self.train_cache.key(doc) for doc in docs]
        outputs: List[Optional[Floats3d]] = [self.train_cache.get(key) for key in keys]
        missing = [i for i, out in enumerate(outputs) if out is None]
        if missing:
            computed = self.predict([docs[i] for i in missing])
            for i, layers in zip(missing, computed):
                outputs[i] = self.train_cache.add(keys[i], layers)  # as later epochs will get them
        return outputs  # type: ignore[return-value]

    def finish_update(self, sgd: Optimizer) -> None:
        if not self.frozen:
            self.model.finish_update(sgd)

    def get_loss(self, examples, scores) -> None:
        pass

    def add_label(self, label: str) -> int:
        raise NotImplementedError

    def initialize(
        self,
        get_examples: Optional[Callable[[], Iterable[Example]]] = None,
        *,
        nlp: Optional[Language] = None,
        options_file: Optional[str] = None,
        weights_file: Optional[str] = None,
    ) -> None:
        """Load the biLM weights and tell the listeners its shape.

        options_file: an AllenNLP/bilm-tf ``options.json``, a directory with
            ``options.json`` and ``weights.hdf5`` (as `BiLM.save_allennlp` and
            `spacy_elmo pretrain` write them), or a model's name:
            "elmo-en-small" ships with the package, and a published model's
            name (`spacy_elmo.published_models`) is downloaded on first use.
        weights_file: the matching ``weights.hdf5`` (unset with a directory).
        Without either, a biLM already loaded is kept.
        get_examples: optional; a few of its docs are run through the biLM as
            a check before training starts.
        """
        if options_file is not None:
            set_bilm(self.model, BiLM.from_allennlp(options_file, weights_file))
        bilm = self._require_bilm()
        fixed_mix_weights(self.vector_mix, bilm.n_layers)  # E401 here, not at the first doc or the next load
        self.train_cache.clear()
        for listener in self.listeners:
            listener.set_upstream_dims(bilm.n_layers, bilm.output_dim)
        if get_examples is not None:
            validate_get_examples(get_examples, "Elmo.initialize")
            self.predict([eg.predicted for eg in islice(get_examples(), 2)])

    # Saving and loading, part by part: the vocab and the model (the biLM's
    # options and weights). The settings travel in the pipeline's config.cfg
    # and nowhere else.

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save the component to the folder `path` (files `model`, and `vocab` unless excluded).
        The model file is replaced whole or not at all: a disk that is full is
        E513, a folder that is read-only E514; a biLM whose weights are not
        finite is not saved (E536)."""

        def save_model(p: Path) -> None:
            data = self.model.to_bytes()  # first: a refusal (E536) leaves the file there as it was
            with writing(p), atomic_path(p) as tmp:
                tmp.write_bytes(data)

        serialize = {"vocab": lambda p: self.vocab.to_disk(p, exclude=exclude), "model": save_model}
        util.to_disk(path, serialize, exclude)

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """The component as bytes (its `model`, and `vocab` unless excluded)."""
        serialize = {"vocab": lambda: self.vocab.to_bytes(exclude=exclude), "model": self.model.to_bytes}
        return util.to_bytes(serialize, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Elmo":
        """Load the component saved in `path` (its `model` file, and `vocab` unless excluded).

        A missing or damaged file is a coded error naming it (E507); a
        `vector_mix` that does not fit the loaded biLM is E401. The training
        cache of the old weights' layers is emptied. A `cfg` file in the
        folder is not read: the settings are those of the pipeline's config
        (and of any override given to `spacy.load`).
        """
        path = Path(path)

        def load_model(p: Path) -> None:
            if not p.is_file():
                raise DamagedFileError("E507", path=p, reason="the file is missing")
            with _naming(f"{p}"):
                self.model.from_bytes(p.read_bytes())

        def load_vocab(p: Path) -> None:
            with _naming(f"{p}"):
                self.vocab.from_disk(p, exclude=exclude)

        util.from_disk(path, {"vocab": load_vocab, "model": load_model}, exclude)
        self._weights_loaded()
        return self

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        """Load the component from `bytes_data` (see `from_disk`; a `cfg` in them is not read)."""
        where = f"the bytes of the '{self.name}' component"
        with _naming(where):
            msg = srsly.msgpack_loads(bytes_data)
        if not isinstance(msg, dict):
            raise DamagedFileError("E507", path=where, reason="they hold no component")
        if "model" not in exclude and "model" not in msg:
            raise DamagedFileError("E507", path=where, reason="they have no 'model'")

        def load_model(data: bytes) -> None:
            with _naming(f"{where} ('model')"):
                self.model.from_bytes(data)

        def load_vocab(data: bytes) -> None:
            with _naming(f"{where} ('vocab')"):
                self.vocab.from_bytes(data, exclude=exclude)

        setters = {"vocab": load_vocab, "model": load_model}
        for key, setter in setters.items():
            if key not in exclude and key in msg:
                setter(msg[key])
        self._weights_loaded()
        return self

    def _weights_loaded(self) -> None:
        """After a load: the training cache holds the old weights' layers (emptied),
        and the `vector_mix` must fit the loaded biLM (E401)."""
        self.train_cache.clear()
        bilm = get_bilm(self.model)
        if bilm is not None:
            fixed_mix_weights(self.vector_mix, bilm.n_layers)

    def _require_bilm(self) -> BiLM:
        bilm = get_bilm(self.model)
        if bilm is None:
            raise ConfigError("E403", name=self.name)
        return bilm


def _no_backprop(d_outputs: List[Floats3d]) -> None:
    return None


@contextmanager
def _naming(where: str) -> Iterator[None]:
    """Any failure to read a saved part becomes E507, naming the file."""
    try:
        yield
    except ElmoError as err:
        raise DamagedFileError("E507", path=where, reason=str(err)) from err
    except Exception as err:  # msgpack, HDF5, JSON, thinc: whatever a damaged file makes them raise
        raise DamagedFileError("E507", path=where, reason=f"{type(err).__name__}: {err}") from err
