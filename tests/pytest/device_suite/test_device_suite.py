"""A small device suite for the pytest guard's own test, on libmemarena_cuda_fake.so (a BFC
arena on a simulated 1 GiB device): 16 MiB of weights stay resident for the whole run, one
test peaks 64 MiB above them, the others 4-24 MiB. The device library is loaded by a session
fixture, during the first test's setup, as a suite that imports torch in a fixture does."""

import ctypes
import os

import pytest

MIB = 1 << 20


@pytest.fixture(scope="session")
def use_device():
    device = ctypes.CDLL(os.environ["MEMARENA_FAKE_CUDA"])
    device.fake_device_allocate.restype = ctypes.c_void_p
    device.fake_device_allocate.argtypes = [ctypes.c_size_t]
    device.fake_device_free.argtypes = [ctypes.c_void_p]
    weights = device.fake_device_allocate(16 * MIB)

    def use(size):
        block = device.fake_device_allocate(size)
        assert block, f"the simulated device refused {size} bytes"
        device.fake_device_free(block)

    yield use
    device.fake_device_free(weights)


def test_device_small(use_device):
    use_device(4 * MIB)


def test_device_peaky(use_device):
    use_device(64 * MIB)


def test_device_after_peaky(use_device):
    use_device(8 * MIB)


def test_device_medium(use_device):
    use_device(24 * MIB)
