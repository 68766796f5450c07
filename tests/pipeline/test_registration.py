"""spaCy and srsly find what the package registers through its entry points
(setup.cfg), so nothing depends on `import spacy_elmo` having run first."""

import json
import subprocess
import sys

from spacy.tokens import DocBin

from .pipelines import elmo_pipeline

# In a fresh interpreter that never imports spacy_elmo itself: the doc
# extensions appear when spaCy builds the `elmo` component (or a listener).
EXTENSIONS_ON_BUILD = """
import json, sys
import spacy
from spacy.tokens import Doc
before = Doc.has_extension("elmo")
nlp = spacy.blank("en")
nlp.add_pipe("elmo")
print(json.dumps([before, Doc.has_extension("elmo"), Doc.has_extension("elmo_vector")]))
"""

# A DocBin with doc._.elmo read back without importing spacy_elmo: srsly's
# entry points decode the data; the extension is then registered by hand.
DOCBIN_FRESH = """
import json, sys
import spacy
from spacy.tokens import DocBin
docs = list(DocBin(store_user_data=True).from_disk(sys.argv[1]).get_docs(spacy.blank("en").vocab))
decoded = [type(value).__name__ for doc in docs for value in doc.user_data.values()]
import spacy_elmo
spacy_elmo.install_extensions()
print(json.dumps([decoded, [doc._.elmo.layers.tolist() for doc in docs]]))
"""


def run_fresh(code: str, *args: str):
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_building_the_component_registers_the_extensions():
    assert run_fresh(EXTENSIONS_ON_BUILD) == [False, True, True]


def test_docbin_decodes_elmo_data_in_a_process_that_never_imported_spacy_elmo(bilm_dir, tmp_path):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False)
    docs = list(nlp.pipe(["The cat sat .", "Hello world !"]))
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "docs.spacy")
    decoded, layers = run_fresh(DOCBIN_FRESH, str(tmp_path / "docs.spacy"))
    assert decoded == ["ElmoDocData", "ElmoDocData"]
    for doc, restored in zip(docs, layers):
        assert doc._.elmo.layers.tolist() == restored
