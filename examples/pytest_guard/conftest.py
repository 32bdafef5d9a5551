"""The device for the worked example in docs/observability.md: libmemarena_cuda_fake.so (a
memarena BFC arena on a simulated 1 GiB device, built with the tests as
build/tests/pytest/libmemarena_cuda_fake.so), loaded as the suite's "GPU"."""

import ctypes
import os

import pytest

MIB = 1 << 20


class Device:
    def __init__(self, path):
        self._lib = ctypes.CDLL(path)
        self._lib.fake_device_allocate.restype = ctypes.c_void_p
        self._lib.fake_device_allocate.argtypes = [ctypes.c_size_t]
        self._lib.fake_device_free.argtypes = [ctypes.c_void_p]

    def run(self, *sizes):
        """Allocates `sizes` together (a forward pass's activations), then frees them."""
        blocks = []
        try:
            for size in sizes:
                block = self._lib.fake_device_allocate(size)
                if not block:
                    raise MemoryError(f"device out of memory: {size // MIB} MiB more refused "
                                      f"with {sum(sizes[:len(blocks)]) // MIB} MiB of "
                                      f"activations live")
                blocks.append(block)
        finally:
            for block in blocks:
                self._lib.fake_device_free(block)


@pytest.fixture(scope="session")
def device():
    dev = Device(os.environ["MEMARENA_FAKE_CUDA"])
    weights = dev._lib.fake_device_allocate(256 * MIB)  # the model, resident for the run
    yield dev
    dev._lib.fake_device_free(weights)
