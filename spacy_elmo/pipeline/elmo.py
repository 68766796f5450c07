"""The `elmo` pipeline component: runs the biLM and shares its layers."""
import math
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

import numpy
import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate
from thinc.types import Floats3d

from ..bilm import BiLM
from ..data_classes import ElmoDocData
from ..errors import ElmoError, Errors
from ..extensions import fixed_mix_weights, install_extensions, set_vector_hooks, token_offsets
from ..models.bilm import get_bilm, sentence_starts, set_bilm
from ..models.listener import ElmoListenerModel, replace_listener, replace_listener_cfg
from .layer_cache import LayerCache

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
        nlp.vocab, model, name, frozen=frozen, store_dtype=store_dtype, vector_mix=vector_mix,
        set_vector_hooks=set_vector_hooks, train_cache_mb=train_cache_mb,
    )


class Elmo(TrainablePipe):
    """Run a biLM over docs, store all its layers in ``doc._.elmo``, and share
    them with the listeners of downstream components in training.

    Frozen (the default), the biLM runs without gradients once per batch and
    its outputs for a doc seen before come from a cache; its backprop does
    nothing. Not frozen, the listeners' gradients fine-tune it, with one
    backward pass per batch.
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
        self.cfg: Dict[str, Any] = {
            "frozen": frozen,
            "store_dtype": store_dtype,
            "vector_mix": vector_mix,
            "set_vector_hooks": set_vector_hooks,
            "train_cache_mb": train_cache_mb,
        }
        check_cfg(self.cfg, f"the settings of the '{name}' component")
        self.train_cache = LayerCache(train_cache_mb * 2**20, store_dtype)
        self.model.attrs["replace_listener"] = replace_listener
        self.model.attrs["replace_listener_cfg"] = replace_listener_cfg
        install_extensions()

    @property
    def frozen(self) -> bool:
        return bool(self.cfg["frozen"])

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
            self.listener_map[component_name].remove(listener)
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
        mix = fixed_mix_weights(self.cfg["vector_mix"], bilm.n_layers)
        dtype = self.cfg["store_dtype"]
        sentences = self.model.attrs.get("sentences", "doc")
        for doc, layers in zip(docs, outputs):
            doc._.elmo = ElmoDocData(
                layers=layers.astype(dtype, copy=False), mix=numpy.asarray(mix, dtype="float32"),
                vector_hooks=bool(self.cfg["set_vector_hooks"]), token_offsets=token_offsets(doc),
                sentence_starts=numpy.asarray(sentence_starts(doc, sentences), dtype="int32"),
            )
            if self.cfg["set_vector_hooks"]:
                set_vector_hooks(doc)

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

        All listeners but the last get a callback that accumulates their
        gradient; the last one's callback also runs the biLM's backward pass
        (when not frozen) and the optimiser step.
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
        d_outputs = [self.model.ops.alloc3f(*x.shape) for x in outputs] if bp_outputs else []

        def accumulate_gradient(one_d_outputs: List[Floats3d]) -> None:
            for d_total, d_one in zip(d_outputs, one_d_outputs):
                d_total += d_one

        def backprop(one_d_outputs: List[Floats3d]) -> List[Doc]:
            if bp_outputs is None:
                return []
            accumulate_gradient(one_d_outputs)
            bp_outputs(d_outputs)
            if sgd is not None:
                self.finish_update(sgd)
            return []

        batch_id = ElmoListenerModel.get_batch_id(docs)
        for listener in self.listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate_gradient if bp_outputs else _no_backprop)
        if self.listeners:
            self.listeners[-1].receive(batch_id, outputs, backprop)
        return losses

    def _frozen_outputs(self, docs: List[Doc]) -> List[Floats3d]:
        """The biLM's layers for docs, from the cache where seen before."""
        keys = [self.train_cache.key(doc) for doc in docs]
        outputs: List[Optional[Floats3d]] = [self.train_cache.get(key) for key in keys]
        missing = [i for i, out in enumerate(outputs) if out is None]
        if missing:
            computed = self.predict([docs[i] for i in missing])
            for i, layers in zip(missing, computed):
                outputs[i] = layers
                self.train_cache.add(keys[i], layers)
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

        options_file: an AllenNLP/bilm-tf ``options.json``, or a directory with
            ``options.json`` and ``weights.hdf5`` (as `BiLM.save_allennlp` and
            `spacy_elmo pretrain` write them).
        weights_file: the matching ``weights.hdf5`` (unset with a directory).
        Without either, a biLM already loaded is kept.
        get_examples: optional; a few of its docs are run through the biLM as
            a check before training starts.
        """
        if options_file is not None:
            set_bilm(self.model, BiLM.from_allennlp(options_file, weights_file))
        bilm = self._require_bilm()
        self.train_cache.clear()
        for listener in self.listeners:
            listener.set_upstream_dims(bilm.n_layers, bilm.output_dim)
        if get_examples is not None:
            validate_get_examples(get_examples, "Elmo.initialize")
            self.predict([eg.predicted for eg in islice(get_examples(), 2)])

    # Loading: every part read is checked, and a failure names its file.

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Elmo":
        """Load the component saved in `path` (its `cfg` and `model` files).

        A missing, damaged or hand-edited file is a coded error naming it
        (E507; E508, E406 or E401 for a setting in `cfg` that is not valid).
        """
        path = Path(path)
        exclude = list(exclude)
        for part in _PARTS:
            if part in exclude:
                continue
            if part != "vocab" and not (path / part).is_file():
                raise ElmoError("E507", Errors.E507.format(path=path / part, reason="the file is missing"))
            others = [p for p in _PARTS if p != part]
            self._load_part(part, f"{path / part}", lambda: super(Elmo, self).from_disk(path, exclude=exclude + others))
        self._check_mix(f"{path / 'cfg'}")
        return self

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        """Load the component from `bytes_data` (see `from_disk`)."""
        exclude = list(exclude)
        where = f"the bytes of the '{self.name}' component"
        with _naming(where):
            msg = srsly.msgpack_loads(bytes_data)
        if not isinstance(msg, dict):
            raise ElmoError("E507", Errors.E507.format(path=where, reason="they hold no component"))
        for part in _PARTS:
            if part in exclude or (part == "vocab" and part not in msg):
                continue
            if part not in msg:
                raise ElmoError("E507", Errors.E507.format(path=where, reason=f"they have no '{part}'"))
            data = srsly.msgpack_dumps({part: msg[part]})
            self._load_part(part, f"{where} ('{part}')", lambda: super(Elmo, self).from_bytes(data, exclude=exclude))
        self._check_mix(f"{where} ('cfg')")
        return self

    def _load_part(self, part: str, where: str, load: Callable[[], Any]) -> None:
        before = dict(self.cfg)
        with _naming(where):
            load()
        if part == "cfg":
            try:
                check_cfg(self.cfg, where)
            except ElmoError:
                self.cfg = before
                raise
            self.train_cache = LayerCache(self.cfg["train_cache_mb"] * 2**20, self.cfg["store_dtype"])

    def _check_mix(self, where: str) -> None:
        """The loaded `vector_mix` fits the loaded biLM (E401)."""
        bilm = get_bilm(self.model)
        if bilm is None:
            return
        try:
            fixed_mix_weights(self.cfg["vector_mix"], bilm.n_layers)
        except ElmoError as err:
            raise ElmoError(err.code, f"{str(err).split('] ', 1)[1]} Found in {where}.") from err

    def _require_bilm(self) -> BiLM:
        bilm = get_bilm(self.model)
        if bilm is None:
            raise ElmoError("E403", Errors.E403.format(name=self.name))
        return bilm


def _no_backprop(d_outputs: List[Floats3d]) -> None:
    return None


_PARTS = ("cfg", "vocab", "model")  # what TrainablePipe saves, in its order
_SETTINGS = {  # cfg key: (check, what is expected)
    "frozen": (lambda v: isinstance(v, bool), "true or false"),
    "set_vector_hooks": (lambda v: isinstance(v, bool), "true or false"),
    "train_cache_mb": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                       "a whole number of megabytes >= 0"),
    # (which mixes fit the biLM is checked once it is known: E401)
    "vector_mix": (
        lambda v: isinstance(v, (str, int)) and not isinstance(v, bool) or isinstance(v, list) and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) for w in v
        ),
        "'average', 'top', a layer index or a list of finite layer weights",
    ),
}


def check_cfg(cfg: Dict[str, Any], where: str) -> None:
    """The component's settings, as the factory or a saved `cfg` file gives them."""
    if cfg.get("store_dtype") not in ("float32", "float16"):
        raise ElmoError("E406", Errors.E406.format(found=cfg.get("store_dtype")) + f" Found in {where}.")
    for key, value in cfg.items():
        if key == "store_dtype":
            continue
        if key not in _SETTINGS:
            raise ElmoError("E508", Errors.E508.format(
                key=key, found=value, expected=f"no such setting (the settings are {sorted(_SETTINGS)})", where=where
            ))
        check, expected = _SETTINGS[key]
        if not check(value):
            raise ElmoError("E508", Errors.E508.format(key=key, found=value, expected=expected, where=where))


@contextmanager
def _naming(where: str) -> Iterator[None]:
    """Any failure to read a saved part becomes E507, naming the file."""
    try:
        yield
    except ElmoError as err:
        if err.code in ("E406", "E508"):
            raise
        raise ElmoError("E507", Errors.E507.format(path=where, reason=str(err))) from err
    except Exception as err:  # msgpack, HDF5, JSON, thinc: whatever a damaged file makes them raise
        raise ElmoError("E507", Errors.E507.format(path=where, reason=f"{type(err).__name__}: {err}")) from err
