"""The premise of the CUDA graphs (lstm_graphs.py), checked where no GPU is:
a batch laid out in a rectangle of bucketed steps and rows, scratch beyond each
sentence, gives every real token the packed layout's values."""
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.bilm.char_ids import distinct_words
from spacy_elmo.bilm.lstm_graphs import BUCKETS, RecurrenceGraphs, bucket, rectangle_index
from spacy_elmo.bilm.packing import SentencePacking
from spacy_elmo.errors import ConfigError


def test_buckets_round_up_by_at_most_half():
    assert [bucket(n) for n in (1, 8, 9, 13, 24, 25, 100, 512, 513)] == [8, 8, 12, 16, 24, 32, 128, 512, 768]
    assert all(b / a <= 1.5 for a, b in zip(BUCKETS, BUCKETS[1:]))
    with pytest.raises(ValueError, match="largest bucket"):
        bucket(BUCKETS[-1] + 1)


def test_rectangle_index_places_each_step_at_its_row_offset():
    numpy.testing.assert_array_equal(rectangle_index([3, 3, 2, 1], 8), [0, 1, 2, 8, 9, 10, 16, 17, 24])
    assert rectangle_index([], 8).shape == (0,)


def test_the_rectangle_gives_the_packed_values_bit_for_bit():
    torch.manual_seed(0)
    options = BiLMOptions(char_embedding_dim=8, filters=[(1, 8), (2, 8), (3, 16)], n_highway=1, lstm_dim=32,
                          projection_dim=12, n_layers=2, cell_clip=3.0, proj_clip=3.0)
    model = BiLM(options).eval()
    with torch.no_grad():
        for weights in model.lstm.parameters():
            weights.normal_(0.0, 0.4)  # gates that saturate, clips that bite
    rng = numpy.random.default_rng(0)
    words = "the bank raised its rates again to nobody 's surprise we sat on river".split()
    sentences = [[words[i] for i in rng.integers(0, len(words), n)] for n in (17, 3, 1, 9, 9, 30, 2)]
    packing = SentencePacking.of(*model._check_indexed(*distinct_words(sentences)))
    with torch.inference_mode():
        vectors = model._word_vectors(distinct_words(sentences)[0])
        inputs = torch.nn.functional.embedding(torch.from_numpy(packing.inputs), vectors)
        packed = model.lstm._inference(inputs, packing.batch_sizes)
        rows, steps = bucket(packing.batch_sizes[0]), bucket(len(packing.batch_sizes))
        assert rows * steps > inputs.shape[1]  # there is scratch
        index = torch.from_numpy(rectangle_index(packing.batch_sizes, rows))
        rectangle = torch.full((2, rows * steps, inputs.shape[2]), 7.0)  # scratch of any value
        rectangle.index_copy_(1, index, inputs)
        from_rectangle = model.lstm._inference(rectangle, [rows] * steps)
    assert float(packed[-1].abs().max()) > 0.5
    for layer, out in zip(packed, from_rectangle):
        assert torch.equal(layer, out.index_select(1, index))


def test_graphs_change_nothing_on_a_cpu(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    sentences = [["We", "sat", "on", "the", "river", "bank", "."], ["Hello", "!"]]
    with torch.inference_mode():
        expected = model.encode_words(sentences)
        model.use_cuda_graphs(True)
        model.clear_token_cache()
        assert torch.equal(model.encode_words(sentences), expected)
    assert len(model.lstm.graphs) == 0
    model.use_cuda_graphs(False)
    assert model.lstm.graphs is None


@pytest.mark.parametrize("found", [0, -1, 2.5, True, "8"])
def test_a_bad_number_of_graphs_is_refused(found):
    with pytest.raises(ConfigError, match="E106"):
        RecurrenceGraphs(found)
