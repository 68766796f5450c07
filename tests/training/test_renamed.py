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


# Each module that moved, and a name users import from it.
MOVED = {
    "reader": ("data", "find_files"), "tokenizers": ("data", "make_tokenizer"), "vocab": ("data", "LMVocab"),
    "prepared": ("data", "prepare_corpus"), "lm_batches": ("data", "collate"), "lm": ("objective", "PretrainingLM"),
    "softmax": ("objective", "SoftmaxHead"), "scoring": ("objective", "nll_sums"), "config": ("run", "load_config"),
    "optim": ("run", "Schedule"), "trainer": ("run", "Trainer"), "checkpoint": ("run", "load_checkpoint"),
    "run_dir": ("run", "RunDir"), "train_log": ("run", "TrainLog"), "export": ("run", "export_model"),
    "distributed": ("run", "Distributed"), "plot": ("run", "plot_curves"),
}


@pytest.mark.parametrize("old", list(MOVED))
def test_a_moved_module_still_imports_from_its_old_path_with_a_warning(old):
    part, name = MOVED[old]
    new = importlib.import_module(f"spacy_elmo.training.{part}.{old}")
    with pytest.warns(DeprecationWarning, match=rf"spacy_elmo\.training\.{old} has moved to spacy_elmo\.training\.{part}\.{old}"):
        exec(f"from spacy_elmo.training.{old} import {name} as found", namespace := {})
    assert namespace["found"] is getattr(new, name)
    assert name in dir(importlib.import_module(f"spacy_elmo.training.{old}"))
    with pytest.raises(ImportError):
        exec(f"from spacy_elmo.training.{old} import NoSuchName")
