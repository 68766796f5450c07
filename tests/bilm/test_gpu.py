"""The biLM on CUDA agrees with the CPU: outputs, gradients, reduced precision."""

import json
from dataclasses import replace

import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOptions, batch_to_ids
from spacy_elmo.bilm.precision import precision

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
ORIGINAL = BiLMOptions(filters=FILTERS, n_highway=2, lstm_dim=4096, projection_dim=512, n_layers=2)
SENTENCES = [
    "The bank raised its rates again , to nobody 's surprise .".split(),
    "We sat on the river bank .".split(),
    ["Hello", "!"],
    (
        "Dr. Smith-Jones flew from Zürich to São Paulo on 3 March 2021 , paying €1,200 for https://example.com/a/b ."
    ).split(),
]


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest difference over the larger of 1 and the largest magnitude."""
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).abs().max() / max(1.0, float(b.abs().max())))


def run(model: BiLM, device: str, name: str = "fp32") -> torch.Tensor:
    with torch.inference_mode(), precision(device, name):
        return model.to(device)(batch_to_ids(SENTENCES).to(device)).layers.float().cpu()


def original_model(seed: int = 0) -> BiLM:
    torch.manual_seed(seed)
    model = BiLM(ORIGINAL).eval()
    with torch.no_grad():  # token vectors and states of order 1, as in a trained model
        torch.nn.init.normal_(model.token_encoder.projection.weight, std=ORIGINAL.n_filters**-0.5)
    return model


def test_fixture_cuda_matches_cpu(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    cpu = run(model, "cpu")
    gpu = run(model, "cuda")
    assert relative_error(gpu, cpu) <= 1e-4


def test_original_architecture_cuda_matches_cpu():
    model = original_model()
    cpu = run(model, "cpu")
    gpu = run(model, "cuda")
    assert float(cpu.abs().max()) > 0.1  # not a model of zeros
    assert relative_error(gpu, cpu) <= 1e-4


@pytest.mark.parametrize("name,bound", [("tf32", 1e-2), ("bf16", 5e-2)])
def test_reduced_precision_stays_close(fixture_paths, name, bound):
    model = original_model()
    exact = run(model, "cuda", "fp32")
    reduced = run(model, "cuda", name)
    assert torch.isfinite(reduced).all()
    error = relative_error(reduced, exact)
    assert 0 < error <= bound  # it did run in reduced precision, and stayed close
    assert not torch.backends.cuda.matmul.allow_tf32 or name != "tf32"  # restored after the block


def test_gradients_of_a_fine_tuned_bilm_match(fixture_paths):
    grads = {}
    for device in ("cpu", "cuda"):
        model = BiLM.from_allennlp(*fixture_paths).to(device).train()
        out = model(batch_to_ids(SENTENCES).to(device))
        torch.manual_seed(0)
        weights = torch.randn(out.layers.shape).to(device)
        (out.layers * weights).sum().backward()
        grads[device] = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    assert grads["cpu"].keys() == grads["cuda"].keys() and len(grads["cpu"]) > 10
    for name, cpu_grad in grads["cpu"].items():
        assert relative_error(grads["cuda"][name], cpu_grad) <= 1e-4, name


@pytest.mark.parametrize("cuda_graphs", [False, True])
def test_embed_on_cuda_writes_the_cpu_vectors(fixture_paths, tmp_path, cuda_graphs):
    import h5py

    from spacy_elmo.embed import embed_file

    text = tmp_path / "in.txt"
    text.write_text("\n".join(" ".join(s) for s in SENTENCES) + "\n", encoding="utf8")
    for device in ("cpu", "cuda:0"):
        embed_file(*fixture_paths, text, tmp_path / f"{device[:4]}.hdf5", device=device, cuda_graphs=cuda_graphs)
    with h5py.File(tmp_path / "cpu.hdf5", "r") as a, h5py.File(tmp_path / "cuda.hdf5", "r") as b:
        for key in map(str, range(len(SENTENCES))):
            assert relative_error(torch.from_numpy(b[key][...]), torch.from_numpy(a[key][...])) <= 1e-4
        assert json.loads(a["sentence_to_index"][0]) == json.loads(b["sentence_to_index"][0])


def test_words_to_layers_read_nothing_back_from_the_device(fixture_paths):
    """encode_words decides nothing from values on the GPU: no synchronisation inside it
    (the copy of the result to the host, after it, is the caller's)."""
    model = BiLM.from_allennlp(*fixture_paths).cuda().eval()
    with torch.inference_mode():
        expected = model.encode_words(SENTENCES)  # warm-up: CUDA's own lazy set-up may synchronise
        model.clear_token_cache()
        torch.cuda.set_sync_debug_mode("error")
        try:
            cold = model.encode_words(SENTENCES)
            warm = model.encode_words(SENTENCES[::-1] + [["new", "words"]])
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert torch.equal(cold, expected)
    n = sum(len(s) for s in SENTENCES)
    assert warm.shape[1] == n + 2


def test_host_copies_go_through_page_locked_memory_without_waiting(monkeypatch):
    import numpy

    from spacy_elmo.device import to_device, to_host

    pinned = []
    pin_memory = torch.Tensor.pin_memory

    def recording_pin_memory(self, *args, **kwargs):
        pinned.append(self.shape)
        return pin_memory(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "pin_memory", recording_pin_memory)
    array = numpy.arange(24, dtype=numpy.int64).reshape(4, 6)[:, ::2]  # not contiguous
    torch.cuda.set_sync_debug_mode("error")
    try:
        on_gpu = to_device(array, torch.device("cuda"))
        # The page-locked buffer of the first copy may be handed out again only once
        # that copy is done: the second must not overwrite what the first sends.
        other = to_device(-array, torch.device("cuda"))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert pinned == [(4, 3), (4, 3)]
    assert on_gpu.is_cuda
    back = to_host(on_gpu * 2)
    assert isinstance(back, numpy.ndarray)
    numpy.testing.assert_array_equal(back, array * 2)
    numpy.testing.assert_array_equal(to_host(other), -array)


def test_the_component_path_waits_once_a_batch(fixture_paths):
    """encode_indexed and the copy of its layers to the host: the copy's wait is
    the only synchronisation."""
    import warnings

    from spacy_elmo.bilm.char_ids import distinct_words
    from spacy_elmo.device import to_host

    model = BiLM.from_allennlp(*fixture_paths).cuda().eval()
    expected = run(BiLM.from_allennlp(*fixture_paths), "cpu")
    with torch.inference_mode():
        to_host(model.encode_indexed(*distinct_words(SENTENCES)))  # warm-up
        model.clear_token_cache()
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                layers = to_host(model.encode_indexed(*distinct_words(SENTENCES)))
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    assert len(syncs) <= 1, [str(w.message) for w in syncs]
    mask = batch_to_ids(SENTENCES)[:, :, 0] > 0
    assert relative_error(torch.from_numpy(layers), expected[:, mask]) <= 1e-4


def test_copies_to_the_host_come_one_behind_intact_and_wait_once_each():
    """copied_to_host: array k is handed over once tensor k + 1 is queued; every
    array arrives whole while later tensors are made on a busy GPU; one wait an
    array (the copy's event), no other synchronisation."""
    import warnings

    from spacy_elmo.device import copied_to_host

    weight = torch.randn(2048, 2048, device="cuda") / 2048**0.5
    events = []

    def made(n):
        for k in range(n):
            events.append(("made", k))
            x = torch.full((2048, 2048), float(k), device="cuda")
            for _ in range(20):  # keep the GPU busy while earlier copies run
                x = (x @ weight) * 0 + k
            yield x

    list(copied_to_host(made(2)))  # warm-up: the copy stream, the page-locked pool
    events.clear()
    waits = []
    synchronize = torch.cuda.Event.synchronize

    def counted(event):
        waits.append(event)
        return synchronize(event)

    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught, pytest.MonkeyPatch.context() as patch:
            patch.setattr(torch.cuda.Event, "synchronize", counted)
            warnings.simplefilter("always")
            arrays = []
            for k, array in enumerate(copied_to_host(made(6))):
                events.append(("got", k))
                arrays.append(array.copy())
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert events == [
        ("made", 0),
        ("made", 1),
        ("got", 0),
        ("made", 2),
        ("got", 1),
        ("made", 3),
        ("got", 2),
        ("made", 4),
        ("got", 3),
        ("made", 5),
        ("got", 4),
        ("got", 5),
    ]
    for k, array in enumerate(arrays):
        assert array.shape == (2048, 2048) and (array == k).all(), k
    assert len(waits) == 6  # one a copy (sync-debug mode does not see an event's wait)
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    assert not syncs, [str(w.message) for w in syncs]


@pytest.mark.parametrize("clip", [3.0, None])
def test_the_cell_kernel_gives_the_eight_kernels_values(clip):
    """cell_kernel.py against the step-by-step update it replaces, on
    pre-activations that saturate the gates and cells that the clip bites."""
    from spacy_elmo.bilm.recurrence.cell_kernel import fused_cell_update

    torch.manual_seed(0)
    gates = torch.randn(2, 300, 4 * 1024, device="cuda") * 4
    cell = torch.randn(2, 300, 1024, device="cuda") * 3
    cell[0, 0, :4] = torch.tensor([float("nan"), 1e30, -1e30, 0.0])
    views = [gates[:, :, k * 1024 : (k + 1) * 1024] for k in range(4)]  # i, f, o, j: strided views
    found_cell, found_out = fused_cell_update(*views, cell[:, :300], clip)

    expected_cell, g = cell.clone(), gates.clone()
    g.tanh_()
    torch.add(torch.tensor(0.5, device="cuda"), g[:, :, :3072], alpha=0.5, out=g[:, :, :3072])
    expected_cell.mul_(g[:, :, 1024:2048])
    expected_cell.add_(g[:, :, :1024] * g[:, :, 3072:])
    if clip:
        expected_cell.clamp_(-clip, clip)
    expected_out = torch.tanh(expected_cell) * g[:, :, 2048:3072]
    for found, expected in ((found_cell, expected_cell), (found_out, expected_out)):
        assert found.shape == expected.shape and found.is_contiguous()
        same = (found == expected) | (found.isnan() & expected.isnan())
        assert bool(same.all()), f"{int((~same).sum())} values differ, by up to {relative_error(found, expected)}"


def test_the_cell_kernel_changes_no_layer(fixture_paths):
    """The biLM's layers with the cell in one kernel and in eight, eager and from CUDA graphs."""
    from spacy_elmo.bilm.char_ids import distinct_words

    def layers(model, graphs):
        model.use_cuda_graphs(graphs)  # captured again: for the cell as it is now
        model.clear_token_cache()
        return [model.encode_indexed(*distinct_words(batch)) for batch in graph_batches()]

    for model in (BiLM.from_allennlp(*fixture_paths), original_model()):
        model = model.cuda().eval()
        with torch.inference_mode():
            one = [layers(model, False), layers(model, True)]
            model.lstm.use_paths(replace(model.lstm.paths, fused_cell_devices=()))  # the eight kernels
            eight = [layers(model, False), layers(model, True)]
        # Each against its own kind: eager and graphed differ by rounding (graphs compute padded rows).
        for found, expected in zip(one, eight):
            for a, b in zip(found, expected):
                assert torch.equal(a, b), relative_error(a, b)


def graph_batches():
    """Batches of several shapes: a sentence of 1 to 40 tokens, 1 to 70 sentences."""
    words = [w for s in SENTENCES for w in s]
    rng = torch.Generator().manual_seed(0)

    def sentence(n):
        return [words[int(i)] for i in torch.randint(len(words), (n,), generator=rng)]

    return [
        [sentence(n) for n in lengths]
        for lengths in ([5], [40, 3, 3, 1], [int(n) for n in torch.randint(1, 25, (70,), generator=rng)], [12] * 9)
    ]


@pytest.mark.parametrize("name", ["fixture", "original"])
def test_cuda_graphs_give_the_step_by_step_values(fixture_paths, name):
    model = (BiLM.from_allennlp(*fixture_paths) if name == "fixture" else original_model()).cuda().eval()
    batches = graph_batches()
    with torch.inference_mode(), precision("cuda", "fp32"):
        eager = [model.encode_words(batch) for batch in batches]
        model.use_cuda_graphs(True)
        first = [model.encode_words(batch) for batch in batches]
        captures = model.lstm.graphs.captures
        again = [model.encode_words(batch) for batch in batches[::-1]][::-1]
    assert captures == len(model.lstm.graphs) >= 3  # a graph per bucket of rows
    assert model.lstm.graphs.captures == captures  # replayed, not captured again
    for e, f, a in zip(eager, first, again):
        assert float(e.abs().max()) > 0.1
        assert relative_error(f, e) <= 1e-5
        assert torch.equal(a, f)  # a replay gives what the capture gave


def test_cuda_graphs_replay_without_synchronising(fixture_paths):
    import numpy

    from spacy_elmo.bilm.char_ids import distinct_words
    from spacy_elmo.device import to_host

    model = BiLM.from_allennlp(*fixture_paths).cuda().eval()
    model.use_cuda_graphs(True)
    batch = graph_batches()[1]
    with torch.inference_mode():
        expected = to_host(model.encode_indexed(*distinct_words(batch)))  # the capture synchronises
        torch.cuda.set_sync_debug_mode("error")
        try:
            replayed = model.encode_indexed(*distinct_words(batch))
        finally:
            torch.cuda.set_sync_debug_mode("default")
    numpy.testing.assert_array_equal(to_host(replayed), expected)


def test_cuda_graphs_follow_the_weights_and_the_arithmetic(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths).cuda().eval()
    model.use_cuda_graphs(True)
    batch = graph_batches()[3]
    with torch.inference_mode():
        with precision("cuda", "fp32"):
            before = model.encode_words(batch)
        with precision("cuda", "tf32"):
            model.encode_words(batch)
        assert model.lstm.graphs.captures == 2  # nine rows, one graph; TF32 products are another
        with torch.no_grad():  # new weights in the same memory: the graph reads them
            for weights in model.lstm.W_proj:
                weights.mul_(0.5)
        with precision("cuda", "fp32"):
            halved = model.encode_words(batch)
        model.cpu().cuda()  # the weights in new memory: captured again
        with precision("cuda", "fp32"):
            moved = model.encode_words(batch)
        model.use_cuda_graphs(False)
        with precision("cuda", "fp32"):
            eager = model.encode_words(batch)
    assert model.lstm.graphs is None
    assert not torch.equal(halved, before)
    assert relative_error(halved, eager) <= 1e-5 and relative_error(moved, eager) <= 1e-5


def test_cuda_graphs_keep_at_most_max_graphs(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths).cuda().eval()
    model.use_cuda_graphs(True, max_graphs=2)
    batches = graph_batches()
    with torch.inference_mode():
        for batch in batches:
            model.encode_words(batch)
    assert len(model.lstm.graphs) == 2
    assert model.lstm.graphs.captures > 2  # the 70 sentences' batch alone meets more row counts
