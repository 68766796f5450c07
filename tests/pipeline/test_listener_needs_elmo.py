"""A listener reads doc._.elmo and never runs the biLM itself, except for the
sample docs of initialisation: a pipeline whose `elmo` component did not run
fails with E409 instead of silently running the biLM inside the NER."""

import pytest
import spacy

from spacy_elmo.errors import ElmoError

from .pipelines import elmo_pipeline

TEXTS = ["Bob went to Paris .", "Carol met Dave in Lima ."]


def trained_pipeline(bilm_dir):
    nlp, examples = elmo_pipeline(bilm_dir)
    optimizer = nlp.create_optimizer()
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    return nlp, examples


def entities(docs):
    return [[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs]


def count_bilm_runs(nlp, monkeypatch):
    """Count the docs of each run of the elmo component's biLM model (a list, read later)."""
    model = nlp.get_pipe("elmo").model
    calls = []
    forward = model._func

    def counted(model, docs, is_train):
        calls.append(len(docs))
        return forward(model, docs, is_train)

    monkeypatch.setattr(model, "_func", counted)
    return calls


def test_disabled_elmo_is_a_coded_error_not_a_silent_biLM_run(bilm_dir, monkeypatch):
    nlp, _ = trained_pipeline(bilm_dir)
    expected = entities(nlp.pipe(TEXTS))  # the whole pipeline works
    runs = count_bilm_runs(nlp, monkeypatch)
    with nlp.select_pipes(disable=["elmo"]):
        with pytest.raises(ElmoError, match=r"E409.*component 'ner'.*'elmo' component.*2 of 2 docs") as err:
            list(nlp.pipe(TEXTS))
    assert "Enable it" in str(err.value) and "before 'ner'" in str(err.value)
    assert runs == []  # the listener did not run the biLM
    assert entities(nlp.pipe(TEXTS)) == expected  # enabled again, the same predictions
    assert runs == [len(TEXTS)]


def test_loaded_with_elmo_disabled_or_excluded(bilm_dir, tmp_path):
    nlp, _ = trained_pipeline(bilm_dir)
    expected = entities(nlp.pipe(TEXTS))
    nlp.to_disk(tmp_path / "pipeline")
    assert entities(spacy.load(tmp_path / "pipeline").pipe(TEXTS)) == expected
    for how in ("disable", "exclude"):
        loaded = spacy.load(tmp_path / "pipeline", **{how: ["elmo"]})
        with pytest.raises(ElmoError, match="E409"):
            loaded(TEXTS[0])


def test_training_without_elmo_is_a_coded_error(bilm_dir, monkeypatch):
    nlp, examples = trained_pipeline(bilm_dir)
    runs = count_bilm_runs(nlp, monkeypatch)
    with nlp.select_pipes(disable=["elmo"]):
        with pytest.raises(ElmoError, match="E409"):
            nlp.update(examples[:4], sgd=nlp.create_optimizer())
    assert runs == []


def test_only_the_initialisation_sample_is_run_by_the_listener(bilm_dir):
    nlp, examples = elmo_pipeline(bilm_dir)
    listener = nlp.get_pipe("elmo").listeners[0]
    sample = [doc for doc, _ in listener._init_sample]
    assert sample  # nlp.initialize passed the listener docs that 'elmo' had not annotated
    assert all(doc._.elmo is None for doc in sample)
    assert len(listener.predict(sample[:2])) == 2  # allowed: these very docs, during initialisation
    same_text = nlp.make_doc(sample[0].text)  # another doc, though with the same tokens
    with pytest.raises(ElmoError, match="E409"):
        listener.predict([same_text])
    nlp.update(examples[:4], sgd=nlp.create_optimizer())  # initialisation is over
    assert listener._init_sample == []
    with pytest.raises(ElmoError, match="E409"):
        listener.predict(sample[:1])
