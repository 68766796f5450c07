"""The CUDA graphs' layout (recurrence/graphs.py), checked where no GPU is: a batch
run in chunks of a few steps and bucketed rows, scratch beyond each sentence,
the state carried from chunk to chunk, gives every token the packed layout's
values. Off a GPU the chunks run eagerly through the same buffers and calls;
tests/bilm/test_gpu.py replays them as graphs."""

import copy
import pickle
from dataclasses import replace

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.recurrence import RecurrenceGraphs
from spacy_elmo.bilm.recurrence.graphs import bucket, chunk_layout
from spacy_elmo.errors import ConfigError

from .helpers import BATCH_LENGTHS, STACK_CHANGES, packed_inputs, scaled_stack


def test_buckets_round_up_by_at_most_half():
    assert [bucket(n) for n in (1, 8, 9, 13, 24, 25, 100, 512, 513)] == [8, 8, 12, 16, 24, 32, 128, 512, 768]
    for n in (7, 1000, 123_457, 10**7):
        assert n <= bucket(n) < 1.5 * max(n, 8) or bucket(n) == 8


def test_chunk_layout_places_each_step_in_its_chunk():
    rows, index = chunk_layout([13, 13, 9, 9, 9, 2], steps=4)
    assert rows == [16, 12]
    expected = [*range(13), *range(16, 29), *range(32, 41), *range(48, 57), *range(9), 12, 13]
    numpy.testing.assert_array_equal(index, expected)
    assert chunk_layout([], steps=4)[1].shape == (0,)


@pytest.mark.parametrize("changes", STACK_CHANGES)
def test_the_chunks_give_the_packed_values_bit_for_bit(changes, gate_form, threads):
    model = scaled_stack(**changes)
    graphs = RecurrenceGraphs()
    with torch.inference_mode():
        for lengths in BATCH_LENGTHS:
            inputs, batch_sizes = packed_inputs(model, lengths)
            packed = model.lstm._inference(inputs, batch_sizes)
            chunked = graphs(model.lstm, inputs, batch_sizes)
            assert float(packed[-1].abs().max()) > 0.3
            for a, b in zip(packed, chunked):
                assert torch.equal(a, b)
    assert len(graphs) == graphs.captures == 4  # one per row count: 8 (twice), 12, 48, 32


def test_the_chunks_follow_changed_weights():
    model = scaled_stack()
    graphs = RecurrenceGraphs()
    with torch.inference_mode():
        inputs, batch_sizes = packed_inputs(model, (6, 5, 2))
        before = graphs(model.lstm, inputs, batch_sizes)
        with torch.no_grad():
            model.lstm.W_hidden[1].mul_(0.5)  # in place: its version counter moves
        after = graphs(model.lstm, inputs, batch_sizes)
        model.lstm.use_paths(replace(model.lstm.paths, graphs=graphs))
        model.lstm.W_proj[0].data.mul_(0.5)  # through .data: no trace, until told
        model.clear_token_cache()
        told = graphs(model.lstm, inputs, batch_sizes)
        expected = model.lstm._inference(inputs, batch_sizes)
    assert torch.equal(before[0], after[0]) and not torch.equal(before[1], after[1])
    assert all(torch.equal(a, b) for a, b in zip(told, expected))


def test_graphs_change_nothing_on_a_cpu(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    sentences = [["We", "sat", "on", "the", "river", "bank", "."], ["Hello", "!"]]
    with torch.inference_mode():
        expected = model.encode_words(sentences)
        model.use_cuda_graphs(True)
        model.clear_token_cache()
        assert torch.equal(model.encode_words(sentences), expected)
    assert len(model.lstm.graphs) == 0  # the CPU path never reaches them
    model.use_cuda_graphs(False)
    assert model.lstm.graphs is None


def test_chunks_keep_at_most_max_graphs():
    model = scaled_stack()
    graphs = RecurrenceGraphs(max_graphs=2)
    with torch.inference_mode():
        for lengths in [(3,) * 40, (3,) * 20, (3,) * 12, (3,) * 40]:
            inputs, batch_sizes = packed_inputs(model, lengths)
            graphs(model.lstm, inputs, batch_sizes)
    assert len(graphs) == 2
    assert graphs.captures == 4  # 48, 24, 12, then 48 again: it had been dropped


def test_a_copy_or_a_pickle_keeps_the_setting_and_none_of_the_graphs():
    model = scaled_stack()
    model.use_cuda_graphs(True, max_graphs=3)
    with torch.inference_mode():
        inputs, batch_sizes = packed_inputs(model, (6, 5, 2))
        expected = model.lstm.graphs(model.lstm, inputs, batch_sizes)
        assert len(model.lstm.graphs) == 1
        for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            assert copied.lstm.graphs is not model.lstm.graphs
            assert copied.lstm.graphs.max_graphs == 3 and len(copied.lstm.graphs) == 0
            found = copied.lstm.graphs(copied.lstm, inputs, batch_sizes)
            assert all(torch.equal(a, b) for a, b in zip(found, expected))
    assert len(model.lstm.graphs) == 1


def test_a_bilm_made_under_inference_mode_runs_in_chunks():
    with torch.inference_mode():
        model = scaled_stack()
        inputs, batch_sizes = packed_inputs(model, (9, 3))
        expected = model.lstm._inference(inputs, batch_sizes)
        found = RecurrenceGraphs()(model.lstm, inputs, batch_sizes)
    assert all(torch.equal(a, b) for a, b in zip(found, expected))


@pytest.mark.parametrize("found", [0, -1, 2.5, True, "8"])
def test_a_bad_number_of_graphs_is_refused(found):
    with pytest.raises(ConfigError, match="E106"):
        RecurrenceGraphs(found)
