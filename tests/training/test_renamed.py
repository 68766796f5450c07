"""Renamed public names still import, with a DeprecationWarning naming the new one."""
import importlib

import pytest

from spacy_elmo.training import LMVocab, PretrainingLM


@pytest.mark.parametrize("module,old,new,obj", [
    ("spacy_elmo.training", "Vocab", "LMVocab", LMVocab),
    ("spacy_elmo.training.vocab", "Vocab", "LMVocab", LMVocab),
    ("spacy_elmo.training", "BidirectionalLM", "PretrainingLM", PretrainingLM),
    ("spacy_elmo.training.lm", "BidirectionalLM", "PretrainingLM", PretrainingLM),
])
def test_old_name_warns_and_is_the_new_object(module, old, new, obj):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old} is now called {new}"):
        assert getattr(mod, old) is obj
    with pytest.raises(AttributeError):
        getattr(mod, "NoSuchName")
