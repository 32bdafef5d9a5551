"""memarena as PyTorch's CUDA allocator, with or without the C++ hooks.

The three-line route (torch.cuda.memory.CUDAPluggableAllocator, no compiler) swaps the
allocator: memarena_cuda_malloc raises on out of memory (PyTorch turns the C++ exception into
RuntimeError carrying memarena's diagnostic), but torch.cuda.empty_cache(),
Tensor.record_stream(), set_per_process_memory_fraction() and CUDA graph pools do not reach
memarena.

install(hooks=False) is that route plus the two hooks whose C signature PyTorch's Python
binding accepts as a plain function address (torch._C._CUDAPluggableAllocator.set_reset_fn and
.set_record_stream_fn): empty_cache and record_stream then reach memarena, no compiler needed.

install(hooks=True) (the default) compiles memarena_torch_hooks.cpp once with
torch.utils.cpp_extension, or with one direct compiler call when ninja is absent (cached under
$TORCH_EXTENSIONS_DIR or ~/.cache/torch_extensions) and installs every hook:
empty_cache, record_stream, memory fraction and graph pools with PyTorch's stream filter; out
of memory raises torch.OutOfMemoryError. Either way the swap must happen before CUDA is
initialised in the process (before the first CUDA tensor).

    import memarena_torch_hooks
    memarena_torch_hooks.install("/path/to/build/cuda/libmemarena_cuda.so")
"""

import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

# Hooks PyTorch's Python binding takes as function addresses, with memarena's export whose C
# signature is exactly the one PyTorch calls (torch/csrc/cuda/Module.cpp,
# registerCudaPluggableAllocator): set_reset_fn void(), set_record_stream_fn
# void(void*, cudaStream_t).
_ADDRESS_HOOKS = (
    ("set_reset_fn", "memarena_cuda_empty_cache"),
    ("set_record_stream_fn", "memarena_cuda_record_stream"),
)


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


def _install_plain(torch, library):
    """The pluggable allocator plus the address hooks; returns the allocator and the names of
    the hooks it set."""
    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        library, "memarena_cuda_malloc", "memarena_cuda_free")
    exports = ctypes.CDLL(library)
    handle = allocator.allocator()
    installed = []
    for setter, export in _ADDRESS_HOOKS:
        if hasattr(handle, setter):
            getattr(handle, setter)(ctypes.cast(getattr(exports, export), ctypes.c_void_p).value)
            installed.append(setter)
    torch.cuda.memory.change_current_allocator(allocator)
    return allocator, installed


def install(path=None, hooks=True, verbose=False):
    """Makes memarena PyTorch's CUDA allocator. Raises RuntimeError when CUDA is already
    initialised (PyTorch cannot swap allocators then), FileNotFoundError for a missing library,
    and the compiler's error when the helper cannot be built (hooks=True needs a C++ compiler,
    the CUDA toolkit headers and a CUDA build of PyTorch). Returns the allocator object
    (hooks=False) or the compiled module (hooks=True)."""
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
        allocator, _ = _install_plain(torch, library)
        return allocator
    from torch.utils import cpp_extension

    source = os.path.join(_HERE, "memarena_torch_hooks.cpp")
    if cpp_extension.is_ninja_available():
        module = cpp_extension.load(name="memarena_torch_hooks", sources=[source],
                                    extra_ldflags=["-ldl"], with_cuda=True, verbose=verbose)
    else:
        module = _build_without_ninja(torch, cpp_extension, source, verbose)
    module.install(library)
    return module


def _paths(function):
    """cpp_extension's include_paths / library_paths for CUDA, under either signature
    (device_type= since PyTorch 2.6, cuda= before)."""
    try:
        return function(device_type="cuda")
    except TypeError:
        return function(cuda=True)


def _build_without_ninja(torch, cpp_extension, source, verbose):
    """cpp_extension.load needs ninja, which a pip install of PyTorch does not bring: compile
    the helper with one compiler call and the flags cpp_extension would pass, cached beside
    its extensions, and load it."""
    import importlib.machinery
    import importlib.util
    import subprocess
    import sysconfig

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "torch_extensions")
    build_dir = os.path.join(root, f"memarena_torch_hooks_{torch.__version__}_direct")
    os.makedirs(build_dir, exist_ok=True)
    target = os.path.join(build_dir, "memarena_torch_hooks" + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.exists(target) or os.path.getmtime(target) < os.path.getmtime(source):
        flags = ["-O2", "-std=c++17", "-fPIC", "-shared",
                 "-DTORCH_EXTENSION_NAME=memarena_torch_hooks", "-DTORCH_API_INCLUDE_EXTENSION_H",
                 f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
        for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):  # PyTorch before 2.9 wants them
            value = getattr(torch._C, f"_PYBIND11_{name}", None)
            if value:
                flags.append(f'-DPYBIND11_{name}="{value}"')
        includes = _paths(cpp_extension.include_paths) + [sysconfig.get_paths()["include"]]
        libraries = [f"-L{p}" for p in _paths(cpp_extension.library_paths)]
        libraries += ["-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch",
                      "-ltorch_python", "-ldl"]
        command = ([os.environ.get("CXX", "c++")] + flags + [f"-I{p}" for p in includes] +
                   [source, "-o", target + ".tmp"] + libraries)
        done = subprocess.run(command, capture_output=not verbose, text=True)
        if done.returncode != 0:
            raise RuntimeError("memarena: compiling the PyTorch helper failed (ninja is absent, so "
                               f"it was compiled directly): {' '.join(command)}\n"
                               f"{(done.stderr or '')[-4000:]}")
        os.replace(target + ".tmp", target)
    loader = importlib.machinery.ExtensionFileLoader("memarena_torch_hooks", target)
    spec = importlib.util.spec_from_loader("memarena_torch_hooks", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
