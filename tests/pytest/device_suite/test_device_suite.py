"""A small device suite for the pytest guard's own test, on libmemarena_cuda_fake.so (a BFC
arena on a simulated 1 GiB device): 16 MiB of weights stay resident for the whole run, one
test peaks 64 MiB above them, the others 4-24 MiB."""

import ctypes
import os

MIB = 1 << 20

_DEVICE = ctypes.CDLL(os.environ["MEMARENA_FAKE_CUDA"])
_DEVICE.fake_device_allocate.restype = ctypes.c_void_p
_DEVICE.fake_device_allocate.argtypes = [ctypes.c_size_t]
_DEVICE.fake_device_free.argtypes = [ctypes.c_void_p]

WEIGHTS = _DEVICE.fake_device_allocate(16 * MIB)


def use_device(size):
    block = _DEVICE.fake_device_allocate(size)
    assert block, f"the simulated device refused {size} bytes"
    _DEVICE.fake_device_free(block)


def test_device_small():
    use_device(4 * MIB)


def test_device_peaky():
    use_device(64 * MIB)


def test_device_after_peaky():
    use_device(8 * MIB)


def test_device_medium():
    use_device(24 * MIB)
