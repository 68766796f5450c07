"""An ELMoForManyLangs model in a spaCy pipeline for another language than
English: initialised from its folder, saved and loaded with its tables."""

import numpy
import spacy

from ..bilm.efml_reference import build_efml_model, efml_importable

TEXT = "Жизнь прекрасна. Кот сидит на über."


def test_an_efml_model_runs_saves_and_loads_in_a_russian_pipeline(tmp_path):
    with efml_importable(tmp_path / "site"):
        folder = build_efml_model(tmp_path / "efml")
    nlp = spacy.blank("ru")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo").initialize(options_file=str(folder))
    doc = nlp(TEXT)
    assert doc._.elmo.layers.shape == (3, len(doc), 16)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert numpy.array_equal(loaded(TEXT)._.elmo.layers, doc._.elmo.layers)
