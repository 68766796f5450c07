"""`ElmoEmbedder`, AllenNLP 0.9's interface: against bilm-tf's outputs of the
fixture biLM (tests/fixtures/allennlp_elmo), the biLM itself and the `elmo`
component."""

import io
import json
import shutil

import h5py
import numpy
import pytest
import spacy
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.elmo_embedder import OLD_ALLENNLP_ELMO, ElmoEmbedder
from spacy_elmo.errors import ElmoError
from spacy_elmo.published_models import ALLENNLP_ELMO, CATALOGUE, model_dir

from .bilm.helpers import fixture_batches
from .numeric import assert_close_to_scale

SENTENCES = [["The", "cat", "sat", "."], ["Ünïcödé", "wörds", "🙂"], [], ["A", "b"]]
TOP_HALVES = 16  # the fixture's projection: the top layer is [forward 16; backward 16]


@pytest.fixture(scope="module")
def embedder(fixture_paths):
    return ElmoEmbedder(*map(str, fixture_paths))


def halves(layers: numpy.ndarray) -> numpy.ndarray:
    """The top layer of (3, n, 32) layers as bilm-tf stores it: (2, n, 16)."""
    return numpy.stack([layers[-1, :, :TOP_HALVES], layers[-1, :, TOP_HALVES:]])


def test_the_first_reference_batch_matches_statelessly(embedder, fixture_dir):
    batch, expected = next(fixture_batches(fixture_dir))
    for layers, reference in zip(embedder.embed_batch(batch), expected):
        assert layers.dtype == numpy.float32
        assert_close_to_scale(halves(layers), reference)


def test_stateful_reproduces_every_reference_batch_as_allennlp_0_9_did(fixture_paths, fixture_dir):
    embedder = ElmoEmbedder(*fixture_paths, stateful=True)
    for batch, expected in fixture_batches(fixture_dir):
        for layers, reference in zip(embedder.embed_batch(batch), expected):
            assert_close_to_scale(halves(layers), reference)
    embedder.reset_states()
    batch, expected = next(fixture_batches(fixture_dir))
    assert_close_to_scale(halves(embedder.embed_sentence(batch[0])), expected[0])


def test_a_sentence_gets_the_same_bits_alone_in_a_batch_and_after_other_batches(embedder, fixture_dir):
    sentence = SENTENCES[1]
    alone = embedder.embed_sentence(sentence)
    for batch, _ in fixture_batches(fixture_dir):
        embedder.embed_batch(batch)
    in_batch = embedder.embed_batch([SENTENCES[0], sentence, SENTENCES[3]])[1]
    assert numpy.array_equal(alone, in_batch)
    assert numpy.array_equal(alone, embedder.embed_sentence(sentence))


def test_the_layers_are_the_biLMs_and_the_components(embedder, fixture_paths):
    bilm = BiLM.from_allennlp(*fixture_paths).eval()
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo").initialize(nlp=nlp, options_file=str(fixture_paths[0]), weights_file=str(fixture_paths[1]))
    for sentence in SENTENCES:
        layers = embedder.embed_sentence(sentence)
        assert layers.shape == (3, len(sentence), 32)
        with torch.inference_mode():
            assert_close_to_scale(layers, bilm.encode_words([sentence]).numpy())
        if sentence:
            doc = nlp(spacy.tokens.Doc(nlp.vocab, words=sentence))
            assert_close_to_scale(layers, doc._.elmo.layers)


def test_empty_batches_and_sentences(embedder):
    assert embedder.embed_batch([]) == []
    assert [layers.shape for layers in embedder.embed_batch([[], ["A"], []])] == [(3, 0, 32), (3, 1, 32), (3, 0, 32)]
    assert list(embedder.embed_sentences([])) == []


def test_embed_sentences_is_lazy_in_batches_and_keeps_the_order(embedder):
    batches = []
    original = embedder.embed_batch

    def counted(batch):
        batches.append(len(batch))
        return original(batch)

    embedder.embed_batch = counted
    try:
        generated = embedder.embed_sentences(iter(SENTENCES * 2), batch_size=3)
        assert batches == []
        first = next(generated)
        assert batches == [3]
        rest = list(generated)
    finally:
        del embedder.embed_batch
    assert batches == [3, 3, 2]
    for got, sentence in zip([first, *rest], SENTENCES * 2):
        assert numpy.array_equal(got, embedder.embed_sentence(sentence))


def test_batch_to_embeddings_is_padded_and_masked(embedder):
    activations, mask = embedder.batch_to_embeddings(SENTENCES)
    assert activations.shape == (4, 3, 4, 32)
    assert mask.tolist() == [[len(s) > k for k in range(4)] for s in SENTENCES]
    for row, (sentence, layers) in enumerate(zip(SENTENCES, embedder.embed_batch(SENTENCES))):
        assert_close_to_scale(activations[row, :, : len(sentence)], layers)
        assert not activations[row, :, len(sentence) :].any()


LINES = ["The cat sat .", "Ünïcödé wörds 🙂", "", "  A   b ", "The cat sat ."]


@pytest.mark.parametrize("output_format", ["all", "top", "average"])
def test_embed_file_writes_allennlps_layout(embedder, tmp_path, output_format):
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"an older output")  # replaced, as 0.9 replaced it
    embedder.embed_file(io.StringIO("\n".join(LINES) + "\n"), str(output), output_format, batch_size=2)
    with h5py.File(output, "r") as f:
        assert set(f) == {"0", "1", "2", "3", "4", "sentence_to_index"}
        index = json.loads(f["sentence_to_index"][0])
        for i, line in enumerate(LINES):
            layers = embedder.embed_sentence(line.split())
            expected = {"all": layers, "top": layers[-1], "average": layers.mean(axis=0)}[output_format]
            assert f[str(i)].dtype == numpy.float32
            assert_close_to_scale(f[str(i)][...], expected)
    assert index == {"The cat sat .": "4", "Ünïcödé wörds 🙂": "1", "": "2", "A   b": "3"}


def test_embed_file_reads_a_path_and_forgets_the_sentences(embedder, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("\n".join(LINES), encoding="utf8")
    embedder.embed_file(text, tmp_path / "out.hdf5", forget_sentences=True)
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        assert set(f) == {"0", "1", "2", "3", "4"}


def test_use_sentence_keys_names_the_datasets_by_sentence(embedder, tmp_path):
    lines = LINES[:2] + ["either: or"]
    embedder.embed_file(io.StringIO("\n".join(lines)), tmp_path / "out.hdf5", "top", use_sentence_keys=True)
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        assert set(f) == set(lines)
        assert_close_to_scale(f["either: or"][...], embedder.embed_sentence(["either:", "or"])[-1])


@pytest.mark.parametrize("line, why", [("The cat sat .", "a repeat"), ("", "''"), ("either/or", "/")])
def test_sentences_that_cannot_be_dataset_names_are_refused(embedder, tmp_path, line, why):
    text = io.StringIO("\n".join(["The cat sat .", line, "last"]))
    with pytest.raises(ElmoError, match=f"E801.*line 2.*{why}"):
        embedder.embed_file(text, tmp_path / "out.hdf5", use_sentence_keys=True)
    assert not (tmp_path / "out.hdf5").exists()


def test_stateful_embed_file_runs_the_lines_in_order_as_0_9_did(fixture_paths, fixture_dir, tmp_path):
    batches = list(fixture_batches(fixture_dir))
    text = io.StringIO("\n".join(" ".join(s) for batch, _ in batches for s in batch))
    ElmoEmbedder(*fixture_paths, stateful=True).embed_file(text, tmp_path / "out.hdf5", "top", batch_size=3)
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        for i, (_, expected) in enumerate(batches):
            for k, reference in enumerate(expected):
                top = f[str(3 * i + k)][...]
                assert_close_to_scale(numpy.stack([top[:, :TOP_HALVES], top[:, TOP_HALVES:]]), reference)


@pytest.fixture
def cached_small(tmp_path, monkeypatch, fixture_paths):
    """The fixture's files placed by hand in the cache as "allennlp-elmo-small"."""
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPACY_ELMO_OFFLINE", "1")
    model = CATALOGUE["allennlp-elmo-small"]
    folder = model_dir(model.name)
    folder.mkdir(parents=True)
    for source, file in zip(fixture_paths, model.files):
        shutil.copy(source, folder / file.name)
    return model


def test_a_catalogue_name_or_allennlps_urls_load_from_the_cache(cached_small, embedder):
    expected = embedder.embed_sentence(SENTENCES[0])
    old_address = [file.url.replace(ALLENNLP_ELMO, OLD_ALLENNLP_ELMO) for file in cached_small.files]
    for arguments in ([cached_small.name], [file.url for file in cached_small.files], old_address):
        assert numpy.array_equal(ElmoEmbedder(*arguments).embed_sentence(SENTENCES[0]), expected)


def test_other_urls_and_missing_paths_are_refused(tmp_path):
    for name in ["https://example.org/elmo_options.json", str(tmp_path / "nowhere")]:
        with pytest.raises(ElmoError, match="E709"):
            ElmoEmbedder(name)


def test_embed_file_reads_binary_files_and_refuses_what_is_not_utf8(embedder, tmp_path):
    embedder.embed_file(io.BytesIO("\ufeffThe cat\r\nsat .\ré\n".encode("utf8")), tmp_path / "out.hdf5", "top")
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        assert json.loads(f["sentence_to_index"][0]) == {"The cat": "0", "sat .": "1", "é": "2"}
    with pytest.raises(ElmoError, match="E203"):
        embedder.embed_file(io.BytesIO("caf\xe9\n".encode("latin-1")), tmp_path / "other.hdf5")
    assert not (tmp_path / "other.hdf5").exists()
