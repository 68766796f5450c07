"""The elmo component's settings live in the config alone: an override at
load time is what the component does, and a saved component holds only its
model (an older save's `cfg` file is not read)."""

import numpy
import pytest
import spacy
import srsly

from spacy_elmo.errors import ElmoError

from ..numeric import assert_close_to_scale
from .pipelines import elmo_pipeline

TEXTS = ["The cat sat . Then it slept .", "Hello world !"]


@pytest.fixture
def saved(tmp_path, bilm_dir):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    nlp.to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline", nlp


def layers(nlp):
    return [doc._.elmo.layers for doc in nlp.pipe(TEXTS)]


def test_a_settings_override_at_load_is_what_the_component_does(saved):
    path, nlp = saved
    loaded = spacy.load(path, config={"components": {"elmo": {"store_dtype": "float16", "vector_mix": "top"}}})
    assert loaded.config["components"]["elmo"]["store_dtype"] == "float16"
    docs = list(loaded.pipe(TEXTS))
    for doc, want in zip(docs, layers(nlp)):
        assert doc._.elmo.layers.dtype == numpy.float16
        assert_close_to_scale(doc._.elmo.layers.astype("float32"), want, rtol=1e-3)
        assert doc._.elmo.mix.tolist() == [0.0, 0.0, 1.0]
    elmo = loaded.get_pipe("elmo")
    assert elmo.store_dtype == "float16" and elmo.train_cache.dtype == "float16"


def test_a_saved_component_is_its_model_and_a_round_trip_predicts_the_same(saved):
    path, nlp = saved
    assert sorted(p.name for p in (path / "elmo").iterdir()) == ["model"]
    for a, b in zip(layers(spacy.load(path)), layers(nlp)):  # the same weights; sums may differ in the last bit
        assert_close_to_scale(a, b)
    fresh = spacy.load(path)
    fresh.get_pipe("elmo").from_bytes(nlp.get_pipe("elmo").to_bytes())
    assert set(srsly.msgpack_loads(nlp.get_pipe("elmo").to_bytes())) == {"vocab", "model"}
    for a, b in zip(layers(fresh), layers(nlp)):
        assert_close_to_scale(a, b)


@pytest.mark.parametrize(
    "old_cfg",
    [
        {
            "frozen": True,
            "store_dtype": "float32",
            "vector_mix": "average",
            "set_vector_hooks": False,
            "train_cache_mb": 1024,
        },
        {"frozen": True, "store_dtype": "float16", "vector_mix": "top", "set_vector_hooks": True, "train_cache_mb": 1},
        '{"frozen": tru',
    ],
)
def test_an_older_save_with_a_cfg_file_loads_with_the_configs_settings(saved, old_cfg):
    path, nlp = saved
    cfg = path / "elmo" / "cfg"
    cfg.write_text(old_cfg) if isinstance(old_cfg, str) else srsly.write_json(cfg, old_cfg)
    loaded = spacy.load(path)
    elmo = loaded.get_pipe("elmo")
    assert (elmo.store_dtype, elmo.vector_mix, elmo.set_vector_hooks) == ("float32", "average", False)
    for a, b in zip(layers(loaded), layers(nlp)):
        assert a.dtype == numpy.float32
        assert_close_to_scale(a, b)
    old_bytes = srsly.msgpack_dumps(
        {"cfg": srsly.json_dumps({"store_dtype": "float16"}), **srsly.msgpack_loads(nlp.get_pipe("elmo").to_bytes())}
    )
    elmo.from_bytes(old_bytes)
    assert elmo.store_dtype == "float32"


@pytest.mark.parametrize(
    "override,code,words",
    [
        ({"store_dtype": "int8"}, "E406", "int8"),
        ({"train_cache_mb": -1}, "E508", "'train_cache_mb'.*megabytes"),
        ({"vector_mix": "bottom"}, "E401", "'bottom'"),
        ({"vector_mix": [0.5, 0.5]}, "E401", r"\[0.5, 0.5\]"),
    ],
)
def test_a_setting_out_of_range_at_load_is_a_coded_error(saved, override, code, words):
    path, _ = saved
    with pytest.raises(ElmoError, match=rf"{code}.*{words}"):
        spacy.load(path, config={"components": {"elmo": override}})


def test_settings_given_in_python_are_checked_as_the_configs_are():
    from spacy.vocab import Vocab

    from spacy_elmo.models.bilm import BiLMModel
    from spacy_elmo.pipeline.elmo import Elmo

    with pytest.raises(ElmoError, match=r"E508.*'vector_mix' is \[0.5, nan\].*finite layer weights"):
        Elmo(Vocab(), BiLMModel(), vector_mix=[0.5, float("nan")])
    with pytest.raises(ElmoError, match=r"E508.*'frozen' is 'yes'.*true or false"):
        Elmo(Vocab(), BiLMModel(), frozen="yes")
    with pytest.raises(ElmoError, match="E406.*int8"):
        Elmo(Vocab(), BiLMModel(), store_dtype="int8")


@pytest.mark.parametrize("mix", ["mean", 3, [0.5, 0.5]])
def test_a_vector_mix_that_does_not_fit_the_bilm_is_refused_at_initialize(bilm_dir, mix):
    # Before, it passed initialize and to_disk and failed at the first doc, and again at load.
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"vector_mix": mix})
    nlp.config["initialize"]["components"]["elmo"] = {"options_file": str(bilm_dir), "weights_file": None}
    with pytest.raises(ElmoError, match="E401"):
        nlp.initialize()
