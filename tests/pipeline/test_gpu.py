"""The component, the listeners and `spacy train --gpu-id 0` on a CUDA device."""

import json
import subprocess
import sys
import warnings

import numpy
import pytest
import torch

from .pipelines import spacy_train

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

TEXTS = [
    "Alice went to Paris and it was great .",
    "Bob went to Lima and it was dull . Then he came back .",
    "Frank went to Tokyo and it was lovely .",
]
# spaCy's textcat cannot take an empty doc on a GPU (Thinc's CuPy reduce_max
# refuses zero lengths), so the empty doc is tried with the NER pipeline only.
EMPTY = ""

PREDICT = """
import json, sys, numpy, spacy
if sys.argv[2] == "gpu":
    spacy.require_gpu(0)
nlp = spacy.load(sys.argv[1])
docs = list(nlp.pipe(json.loads(sys.argv[3])))
assert all(isinstance(d._.elmo.layers, numpy.ndarray) for d in docs), "doc._.elmo must be on the host"
print(json.dumps({
    "ents": [[(e.start, e.end, e.label_) for e in d.ents] for d in docs],
    "cats": [d.cats for d in docs],
    "elmo": [d._.elmo.layers.tolist() for d in docs],
}))
"""


def predict_in_process(model_dir, where):
    result = subprocess.run(
        [sys.executable, "-c", PREDICT, str(model_dir), where, json.dumps(TEXTS)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("config", ["ner_elmo.cfg", "textcat_elmo.cfg", "joint_elmo.cfg"])
def test_spacy_train_gpu_then_load_on_cpu(tmp_path, corpus_dir, bilm_dir, config):
    meta = spacy_train(config, tmp_path / "out", corpus_dir, bilm_dir, extra=["--gpu-id", "0"])
    assert all(v is not None for v in meta["performance"].values() if not isinstance(v, dict))
    on_gpu = predict_in_process(tmp_path / "out" / "model-last", "gpu")
    on_cpu = predict_in_process(tmp_path / "out" / "model-last", "cpu")
    assert on_gpu["ents"] == on_cpu["ents"]
    for a, b in zip(on_gpu["cats"], on_cpu["cats"]):
        assert a.keys() == b.keys()
        assert all(abs(a[k] - b[k]) <= 1e-3 for k in a)
    for a, b in zip(on_gpu["elmo"], on_cpu["elmo"]):
        a, b = numpy.asarray(a), numpy.asarray(b)
        assert a.shape == b.shape and numpy.abs(a - b).max(initial=0) <= 1e-4 * max(1.0, numpy.abs(b).max(initial=0))


def test_pipe_under_require_gpu_gives_host_arrays_that_travel(bilm_dir):
    import spacy
    from spacy.tokens import DocBin

    from .pipelines import elmo_pipeline

    spacy.require_gpu(0)
    try:
        nlp, _ = elmo_pipeline(bilm_dir, with_ner=True, set_vector_hooks=True)
        docs = list(nlp.pipe([*TEXTS, EMPTY] * 8, batch_size=32))
        assert docs[3]._.elmo.layers.shape == (3, 0, 32)
        assert all(isinstance(d._.elmo.layers, numpy.ndarray) for d in docs)
        assert all(isinstance(d._.elmo.mix, numpy.ndarray) for d in docs)
        assert numpy.isfinite(docs[0].vector).all() and numpy.abs(docs[0].vector).max() > 0
        restored = list(
            DocBin(docs=docs, store_user_data=True)
            .from_bytes(DocBin(docs=docs, store_user_data=True).to_bytes())
            .get_docs(nlp.vocab)
        )
        for a, b in zip(docs, restored):
            numpy.testing.assert_array_equal(a._.elmo.layers, b._.elmo.layers)
        # The number of host synchronisations per batch does not grow with the docs in it.
        counts = []
        for n_docs in (4, 32):
            batch = [TEXTS[i % 3] for i in range(n_docs)]
            torch.cuda.set_sync_debug_mode("warn")
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    list(nlp.pipe(batch, batch_size=n_docs))
            finally:
                torch.cuda.set_sync_debug_mode("default")
            counts.append(sum("synchroniz" in str(w.message) for w in caught))
        assert counts[1] <= counts[0], counts
    finally:
        from thinc.api import require_cpu

        require_cpu()


def test_the_cuda_graphs_setting_gives_the_same_layers(bilm_dir):
    import spacy

    from spacy_elmo.models.bilm import get_bilm

    from .pipelines import elmo_pipeline

    texts = [*TEXTS, EMPTY, " ".join(TEXTS)] * 6
    spacy.require_gpu(0)
    try:
        eager, _ = elmo_pipeline(bilm_dir, with_ner=False, model={"@architectures": "spacy-elmo.BiLM.v1"})
        graphed, _ = elmo_pipeline(
            bilm_dir, with_ner=False, model={"@architectures": "spacy-elmo.BiLM.v1", "cuda_graphs": True}
        )
        expected = [d._.elmo.layers for d in eager.pipe(texts, batch_size=8)]
        found = [d._.elmo.layers for d in graphed.pipe(texts, batch_size=8)]
        graphs = get_bilm(graphed.get_pipe("elmo").model).lstm.graphs
        assert graphs is not None and graphs.captures >= 1
        assert get_bilm(eager.get_pipe("elmo").model).lstm.graphs is None
    finally:
        from thinc.api import require_cpu

        require_cpu()
    for a, b in zip(found, expected):
        assert a.shape == b.shape
        assert numpy.abs(a - b).max(initial=0) <= 1e-5 * max(1.0, numpy.abs(b).max(initial=0))


def test_many_batches_a_call_give_the_cpu_layers(bilm_dir):
    """A call cut into many batches (a batch's copy to the host beside the next
    batch's work) gives every doc the layers the CPU gives it."""
    import spacy

    from .pipelines import elmo_pipeline

    texts = [*TEXTS, EMPTY, " ".join(TEXTS)] * 5
    model = {"@architectures": "spacy-elmo.BiLM.v1", "max_batch_tokens": 16, "window_size": 8}
    on_cpu, _ = elmo_pipeline(bilm_dir, with_ner=False, model=model)
    expected = [d._.elmo.layers for d in on_cpu.pipe(texts, batch_size=32)]
    spacy.require_gpu(0)
    try:
        on_gpu, _ = elmo_pipeline(bilm_dir, with_ner=False, model=model)
        found = [d._.elmo.layers for d in on_gpu.pipe(texts, batch_size=32)]
    finally:
        from thinc.api import require_cpu

        require_cpu()
    assert len(found) == len(expected)
    for a, b in zip(found, expected):
        assert isinstance(a, numpy.ndarray) and a.shape == b.shape
        assert numpy.abs(a - b).max(initial=0) <= 1e-4 * max(1.0, numpy.abs(b).max(initial=0))
