"""memarena as PyTorch's CUDA allocator, optionally with the C++ hooks.

The plain route (three lines, no compiler) swaps the allocator through
torch.cuda.memory.CUDAPluggableAllocator: memarena_cuda_malloc raises on out of memory, but
torch.cuda.empty_cache(), Tensor.record_stream(), set_per_process_memory_fraction() and CUDA
graph pools do not reach memarena, because the Python class cannot set those hooks.

install(hooks=True) compiles memarena_torch_hooks.cpp once with torch.utils.cpp_extension
(cached under ~/.cache/torch_extensions) and installs all of them. Either way the swap must
happen before CUDA is initialised in the process (before the first CUDA tensor).

    import memarena_torch_hooks
    memarena_torch_hooks.install("/path/to/build/cuda/libmemarena_cuda.so")
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def find_library(path=None):
    """The path of libmemarena_cuda.so: `path`, else $MEMARENA_CUDA_LIBRARY. Raises
    FileNotFoundError naming what was tried."""
    candidate = path or os.environ.get("MEMARENA_CUDA_LIBRARY")
    if not candidate:
        raise FileNotFoundError(
            "memarena: give the path of libmemarena_cuda.so (build/cuda/libmemarena_cuda.so in a "
            "build tree, <prefix>/lib/libmemarena_cuda.so when installed) or set "
            "MEMARENA_CUDA_LIBRARY")
    candidate = os.path.abspath(candidate)
    if not os.path.isfile(candidate):
        raise FileNotFoundError(f"memarena: {candidate} does not exist")
    return candidate


def install(path=None, hooks=True, verbose=False):
    """Makes memarena PyTorch's CUDA allocator. Raises RuntimeError when CUDA is already
    initialised (PyTorch cannot swap allocators then), FileNotFoundError for a missing library,
    and the compiler's error when the helper cannot be built (hooks=True needs a C++ compiler,
    the CUDA toolkit headers and a CUDA build of PyTorch)."""
    import torch

    library = find_library(path)
    if torch.version.cuda is None or not hasattr(torch.cuda.memory, "CUDAPluggableAllocator"):
        raise RuntimeError(
            f"memarena: PyTorch {torch.__version__} has no CUDA pluggable allocator; a CUDA "
            "build of PyTorch 2.0 or later is needed")
    if torch.cuda.is_initialized():
        raise RuntimeError(
            "memarena: CUDA is already initialised in this process; call install() before the "
            "first CUDA tensor or torch.cuda call")
    if not hooks:
        allocator = torch.cuda.memory.CUDAPluggableAllocator(
            library, "memarena_cuda_malloc", "memarena_cuda_free")
        torch.cuda.memory.change_current_allocator(allocator)
        return allocator
    from torch.utils import cpp_extension

    module = cpp_extension.load(
        name="memarena_torch_hooks",
        sources=[os.path.join(_HERE, "memarena_torch_hooks.cpp")],
        extra_ldflags=["-ldl"],
        with_cuda=True,
        verbose=verbose,
    )
    module.install(library)
    return module
