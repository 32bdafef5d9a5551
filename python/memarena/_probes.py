"""Where the pytest guard reads memory from, one probe per source.

Host: memarena's drop-in C API (memarena_get_stats / memarena_reset_peak_stats) when the
process runs under it, else the kernel's resident set and its high-water mark.
Device: memarena_cuda_get_stats when memarena is PyTorch's allocator, else PyTorch's own
caching-allocator stats, else nothing (no GPU or no torch): the guard then runs host only.

Every probe has the same four calls: start() resets the peak and returns the baseline,
finish() returns the peaks since start(), release() gives cached memory back (the caller
collects garbage first, once for both sides), describe() names the source for the report.
"""

import ctypes
import os
import sys


class MemarenaStats(ctypes.Structure):
    """include/memarena/c_api.h's memarena_stats, field for field."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "bytes_in_use", "bytes_requested", "bytes_held", "bytes_releasable",
        "largest_free_block")] + [("fragmentation", ctypes.c_double)] + [
        (name, ctypes.c_size_t) for name in (
            "peak_bytes_in_use", "peak_bytes_requested", "peak_bytes_held", "limit_bytes")] + [
        (name, ctypes.c_uint64) for name in (
            "num_allocs", "num_frees", "num_reserves", "num_releases", "bytes_released",
            "num_ooms")] + [("max_alloc_size", ctypes.c_size_t)]


def _symbol(library, name, restype, argtypes):
    function = getattr(library, name, None)
    if function is not None:
        function.restype = restype
        function.argtypes = argtypes
    return function


def _loaded_memarena_libraries():
    """The process itself, then every mapped library named libmemarena*: PyTorch loads a
    pluggable allocator with RTLD_LOCAL, so its symbols are not in the global scope."""
    yield ctypes.CDLL(None)
    seen = set()
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                name = os.path.basename(path)
                if name.startswith("libmemarena") and ".so" in name and path not in seen:
                    seen.add(path)
                    yield ctypes.CDLL(path)
    except OSError:
        return


class DropinHostProbe:
    """memarena's host allocator serves malloc: its held bytes are the process's heap."""

    def __init__(self, library):
        self._get = _symbol(library, "memarena_get_stats", ctypes.c_int,
                            [ctypes.POINTER(MemarenaStats)])
        self._reset = _symbol(library, "memarena_reset_peak_stats", None, [])
        self._release = _symbol(library, "memarena_release_unused_spans", ctypes.c_size_t, [])

    @classmethod
    def find(cls):
        library = ctypes.CDLL(None)
        probe = cls(library)
        return probe if probe._get is not None and probe._reset is not None else None

    def _stats(self):
        stats = MemarenaStats()
        if self._get(ctypes.byref(stats)) != 0:
            raise RuntimeError("memarena_get_stats failed")
        return stats

    def start(self):
        self._reset()
        return self._stats().bytes_held

    def finish(self):
        stats = self._stats()
        return {"peak": stats.peak_bytes_held, "peak_in_use": stats.peak_bytes_in_use}

    def release(self):
        return self._release() if self._release is not None else 0

    def describe(self):
        return {"source": "memarena", "what": "host allocator held (drop-in C API)"}


class RssHostProbe:
    """No memarena in the process: the resident set, with the kernel's high-water mark reset
    per test through /proc/self/clear_refs (Linux 4.0 and later)."""

    def __init__(self):
        self._per_test = True

    @staticmethod
    def _status_bytes(field):
        with open("/proc/self/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(f"/proc/self/status has no {field}")

    def start(self):
        try:
            with open("/proc/self/clear_refs", "w", encoding="utf-8") as clear_refs:
                clear_refs.write("5")
        except OSError:
            self._per_test = False  # the high-water mark then covers the whole run so far
        return self._status_bytes("VmRSS")

    def finish(self):
        return {"peak": self._status_bytes("VmHWM"), "peak_in_use": None}

    def release(self):
        return 0

    def describe(self):
        what = "resident set high-water mark" + ("" if self._per_test else " since process start")
        return {"source": "rss", "what": what}


def find_host_probe():
    return DropinHostProbe.find() or RssHostProbe()


class MemarenaCudaProbe:
    """memarena serves PyTorch's device memory (CUDAPluggableAllocator over
    libmemarena_cuda.so): its arenas' held bytes per device."""

    def __init__(self, library, devices):
        self._get = _symbol(library, "memarena_cuda_get_stats", ctypes.c_int,
                            [ctypes.c_int, ctypes.POINTER(MemarenaStats)])
        self._reset = _symbol(library, "memarena_cuda_reset_peak_stats", None, [ctypes.c_int])
        self._release = _symbol(library, "memarena_cuda_release_unused", ctypes.c_size_t,
                                [ctypes.c_int])
        self._devices = devices
        self._per_test = self._reset is not None

    @classmethod
    def find(cls, devices):
        for library in _loaded_memarena_libraries():
            probe = cls(library, devices)
            if probe._get is not None:
                return probe
        return None

    def _sum(self):
        total = {"held": 0, "peak": 0, "peak_in_use": 0, "limit": 0}
        for device in self._devices:
            stats = MemarenaStats()
            if self._get(device, ctypes.byref(stats)) != 0:
                continue  # no arena on this device yet
            total["held"] += stats.bytes_held
            total["peak"] += stats.peak_bytes_held
            total["peak_in_use"] += stats.peak_bytes_in_use
            total["limit"] += stats.limit_bytes
        return total

    def start(self):
        if self._reset is not None:
            for device in self._devices:
                self._reset(device)
        return self._sum()["held"]

    def finish(self):
        total = self._sum()
        return {"peak": total["peak"], "peak_in_use": total["peak_in_use"],
                "limit": _torch_device_total() or total["limit"] or None}

    def release(self):
        if self._release is None:
            return 0
        return sum(self._release(device) for device in self._devices)

    def describe(self):
        what = "memarena device arenas held (memarena_cuda_get_stats)"
        if not self._per_test:
            what += "; peaks since process start (no memarena_cuda_reset_peak_stats)"
        return {"source": "memarena_cuda", "what": what}


class TorchCudaProbe:
    """PyTorch's caching allocator on every visible device: reserved is held, allocated is
    in use."""

    def __init__(self, torch):
        self._cuda = torch.cuda
        self._devices = range(torch.cuda.device_count())

    def _sum(self, read):
        return sum(read(device) for device in self._devices)

    def start(self):
        for device in self._devices:
            self._cuda.synchronize(device)
            self._cuda.reset_peak_memory_stats(device)
        return self._sum(self._cuda.memory_reserved)

    def finish(self):
        for device in self._devices:
            self._cuda.synchronize(device)
        return {"peak": self._sum(self._cuda.max_memory_reserved),
                "peak_in_use": self._sum(self._cuda.max_memory_allocated),
                "limit": _torch_device_total()}

    def release(self):
        before = self._sum(self._cuda.memory_reserved)
        self._cuda.empty_cache()
        return max(0, before - self._sum(self._cuda.memory_reserved))

    def describe(self):
        return {"source": "torch", "what": "PyTorch caching allocator reserved "
                                           "(torch.cuda.max_memory_reserved)"}


def _torch_cuda():
    """torch.cuda when the suite already imported torch and a device is usable, else None.
    The guard never imports torch itself: a host-only suite must not pay for it."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken driver counts as no device, as in memarena's C++ tests
        return None


def _torch_device_total():
    torch = _torch_cuda()
    if torch is None:
        return None
    return sum(torch.cuda.mem_get_info(d)[1] for d in range(torch.cuda.device_count()))


def find_device_probe():
    """memarena's device stats when its CUDA library is loaded, else PyTorch's, else None.
    Asked again before each test: the suite may import torch or load memarena late."""
    torch = _torch_cuda()
    devices = range(torch.cuda.device_count()) if torch is not None else range(1)
    return MemarenaCudaProbe.find(list(devices)) or (TorchCudaProbe(torch) if torch else None)
