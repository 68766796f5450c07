"""Host arrays to a device and back (spacy_elmo.device): on the CPU the same
memory where it can be, nothing lost or changed on the way."""

import numpy
import pytest
import torch

from spacy_elmo.device import check_device, copied_to_host, to_device, to_host
from spacy_elmo.errors import InputError


def test_to_device_on_the_cpu_shares_a_contiguous_array_and_copies_a_strided_one():
    array = numpy.arange(12, dtype=numpy.int64).reshape(3, 4)
    shared = to_device(array, torch.device("cpu"))
    array[0, 0] = 100
    assert shared[0, 0] == 100 and shared.dtype == torch.int64
    strided = array[:, ::2]
    copied = to_device(strided, torch.device("cpu"))
    assert copied.is_contiguous()
    numpy.testing.assert_array_equal(copied.numpy(), strided)


def test_to_host_on_the_cpu_is_the_tensor_own_memory_also_with_gradients():
    tensor = torch.arange(6, dtype=torch.float32, requires_grad=True)
    host = to_host(tensor * 2)
    assert isinstance(host, numpy.ndarray) and host.dtype == numpy.float32
    numpy.testing.assert_array_equal(host, numpy.arange(6) * 2)
    plain = torch.zeros(3)
    to_host(plain)[1] = 5.0
    assert plain[1] == 5.0
    with torch.inference_mode():
        numpy.testing.assert_array_equal(to_host(torch.ones(2, 2)), numpy.ones((2, 2)))


def test_copied_to_host_on_the_cpu_hands_each_array_over_as_its_tensor_comes():
    """Nothing held back off a GPU (there the arrays come one behind: tests/bilm/test_gpu.py)."""
    events = []

    def made():
        for k in range(3):
            events.append(("made", k))
            yield torch.full((2, 3), float(k))

    for k, array in enumerate(copied_to_host(made())):
        events.append(("got", k))
        numpy.testing.assert_array_equal(array, numpy.full((2, 3), float(k)))
    assert events == [("made", 0), ("got", 0), ("made", 1), ("got", 1), ("made", 2), ("got", 2)]
    assert list(copied_to_host([])) == []


def test_a_device_this_machine_lacks_is_a_coded_error():
    with pytest.raises(InputError, match="E509"):
        check_device("no-such-device")
