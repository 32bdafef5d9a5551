"""A stand-in for torch.cuda, so the guard's PyTorch path runs in CI without a GPU or torch:
the caching allocator's rules that the guard relies on (reserved grows to cover allocated and
stays until empty_cache; peaks restart at reset_peak_memory_stats) on a 1 GiB device."""

import sys
import types

DEVICE_BYTES = 1 << 30


class FakeCachingAllocator:
    def __init__(self):
        self.allocated = self.reserved = self.peak_allocated = self.peak_reserved = 0

    def malloc(self, size):
        self.allocated += size
        self.reserved = max(self.reserved, self.allocated)
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def free(self, size):
        self.allocated -= size


def _fake_torch():
    state = FakeCachingAllocator()
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        synchronize=lambda device=None: None,
        memory_reserved=lambda device=None: state.reserved,
        memory_allocated=lambda device=None: state.allocated,
        max_memory_reserved=lambda device=None: state.peak_reserved,
        max_memory_allocated=lambda device=None: state.peak_allocated,
        mem_get_info=lambda device=None: (DEVICE_BYTES - state.reserved, DEVICE_BYTES),
        state=state)

    def reset_peak_memory_stats(device=None):
        state.peak_allocated, state.peak_reserved = state.allocated, state.reserved

    def empty_cache():
        state.reserved = state.allocated

    cuda.reset_peak_memory_stats = reset_peak_memory_stats
    cuda.empty_cache = empty_cache
    return types.SimpleNamespace(cuda=cuda, __name__="torch")


sys.modules["torch"] = _fake_torch()
