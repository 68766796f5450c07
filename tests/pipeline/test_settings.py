"""Settings out of range in the elmo component's model, a listener or a mix:
one coded error (E411) naming each setting, before anything runs."""

import pytest
import spacy

from spacy_elmo.errors import ElmoError
from spacy_elmo.models.bilm import BiLMModel
from spacy_elmo.models.listener import ElmoListener, ElmoStandalone
from spacy_elmo.models.scalar_mix import ScalarMix

BILM = "spacy-elmo.BiLM.v1"


@pytest.mark.parametrize(
    "settings,names",
    [
        ({"window_size": -1}, ["window_size"]),
        ({"window_size": 0}, ["window_size"]),
        ({"max_batch_tokens": 0}, ["max_batch_tokens"]),
        ({"max_batch_tokens": -5, "window_size": -1}, ["max_batch_tokens", "window_size"]),
        ({"max_batch_tokens": 64, "window_size": 128}, ["max_batch_tokens", "window_size"]),
    ],
)
def test_the_elmo_models_settings_are_checked_when_the_pipeline_is_built(settings, names):
    nlp = spacy.blank("en")
    with pytest.raises(ElmoError, match="E411") as err:
        nlp.add_pipe("elmo", config={"model": {"@architectures": BILM, **settings}})
    message = str(err.value)
    assert BILM in message and "components.elmo.model" in message
    for name in names:
        assert f"{name} = " in message, message


def test_the_message_says_what_was_expected_and_found():
    with pytest.raises(ElmoError, match=r"E411.*window_size = -1 \(expected .*greater than or equal to 1\)"):
        BiLMModel(window_size=-1)
    with pytest.raises(ElmoError, match=r"E411.*window_size = True"):
        BiLMModel(window_size=True)
    with pytest.raises(ElmoError, match=r"E411.*sentences = 'all'"):
        BiLMModel(sentences="all")


@pytest.mark.parametrize(
    "build",
    [
        lambda: ElmoListener(dropout=-0.1),
        lambda: ElmoListener(dropout=1.0),
        lambda: ElmoStandalone(BiLMModel(), dropout=1.5),
        lambda: ScalarMix(layer_dropout=1.0),
        lambda: ScalarMix(l2_to_uniform=-0.01),
        lambda: ScalarMix(n_layers=0),
        lambda: ScalarMix(layer_norm="yes"),
    ],
)
def test_listener_and_mix_settings_out_of_range(build):
    with pytest.raises(ElmoError, match="E411"):
        build()


def test_valid_settings_build():
    BiLMModel(max_batch_tokens=128, window_size=128)
    ElmoListener(dropout=0.0, mix=ScalarMix(layer_dropout=0.5, l2_to_uniform=0.0, n_layers=3, layer=1))
    ElmoStandalone(BiLMModel(), dropout=0.2)
