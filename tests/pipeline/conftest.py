import shutil

import pytest
import spacy
from spacy.tokens import DocBin

from .util import make_docs


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus")
    nlp = spacy.blank("en")
    DocBin(docs=make_docs(nlp, 40, seed=0), store_user_data=True).to_disk(path / "train.spacy")
    DocBin(docs=make_docs(nlp, 12, seed=1), store_user_data=True).to_disk(path / "dev.spacy")
    return path


@pytest.fixture
def bilm_dir(tmp_path, fixture_paths):
    """The fixture biLM as a directory of its own (deleted files can be tested)."""
    path = tmp_path / "bilm"
    path.mkdir()
    shutil.copy(fixture_paths[0], path / "options.json")
    shutil.copy(fixture_paths[1], path / "weights.hdf5")
    return path
