#!/usr/bin/env python3
"""Issue 10's table on a real GPU with PyTorch: every row, through each way of installing memarena.

Run by scripts/gpu_check.sh on a machine with an NVIDIA GPU and a CUDA build of PyTorch
(2.x; checked for 2.11+cu130). Each check runs in a child process of its own, because the
allocator must be swapped before CUDA is initialised and a failed check may leave CUDA unusable.
Prints one line per check, `PASS route/check: detail` or `FAIL route/check: detail`, then a
summary; exits 1 when any check failed. `--dry-run` lists the plan without importing torch.

Routes (see docs/arena.md, "PyTorch"):
  three-line  torch.cuda.memory.CUDAPluggableAllocator + change_current_allocator, nothing else
  plain       memarena_torch_hooks.install(hooks=False): the above plus the empty_cache and
              record_stream hooks set by function address (no compiler)
  hooks       memarena_torch_hooks.install(): the compiled helper with every hook
"""

import argparse
import os
import subprocess
import sys
import threading
import time

ROUTES = ("three-line", "plain", "hooks")
# About a second of GPU time for torch.cuda._sleep (it spins clock cycles; ~1.5-2 GHz parts).
SLEEP_CYCLES = 2_000_000_000
MiB = 1 << 20


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def check_oom(torch, route):
    """torch.empty(2 * total) raises with memarena's diagnostic; the process keeps working."""
    total = torch.cuda.get_device_properties(0).total_memory
    try:
        x = torch.empty(2 * total, dtype=torch.uint8, device="cuda")
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        error = e
    else:
        return False, f"no exception: a tensor with data_ptr() == {x.data_ptr():#x}"
    oom_type = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    expected = oom_type if route == "hooks" else RuntimeError
    text = str(error)
    y = torch.ones(MiB, device="cuda")
    works = int(y.sum().item()) == MiB
    ok = isinstance(error, expected) and "memarena_cuda: cannot allocate" in text and works
    return ok, (f"{type(error).__name__} (expected {expected.__name__}), diagnostic "
                f"{'present' if 'memarena_cuda: cannot allocate' in text else 'MISSING'}, "
                f"process {'works' if works else 'BROKEN'}: {text.splitlines()[0][:160]}")


def check_record_stream(torch, route):
    """x.record_stream(s2); del x while s2 still writes it; a new tensor of the same size does
    not get x's block, and s2's late write does not land in it."""
    n = 64 * MiB
    main = torch.cuda.current_stream()
    s2 = torch.cuda.Stream()
    x = torch.empty(n, dtype=torch.uint8, device="cuda")
    s2.wait_stream(main)
    with torch.cuda.stream(s2):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(1)  # s2 writes x after about a second
    x.record_stream(s2)
    old = x.data_ptr()
    del x
    busy = not s2.query()
    y = torch.empty(n, dtype=torch.uint8, device="cuda")
    reused = y.data_ptr() == old
    y.fill_(2)
    torch.cuda.synchronize()
    intact = int(y.min().item()) == 2
    ok = busy and not reused and intact
    return ok, (f"s2 {'busy' if busy else 'ALREADY DONE (sleep too short)'} at the reallocation, "
                f"block {'REUSED' if reused else 'not reused'}, new tensor "
                f"{'intact' if intact else 'OVERWRITTEN by s2'}")


def check_empty_cache(torch, route):
    """After freeing a big tensor, torch.cuda.empty_cache() gives the memory to the driver."""
    total = torch.cuda.get_device_properties(0).total_memory
    size = min(8 << 30, total // 4)
    x = torch.empty(size, dtype=torch.uint8, device="cuda")
    x.fill_(0)
    del x
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    torch.cuda.empty_cache()
    free_after, _ = torch.cuda.mem_get_info()
    given = free_after - free_before
    return given >= size * 9 // 10, f"{given / MiB:.0f} MiB given back of {size / MiB:.0f} MiB freed"


def check_pairs(torch, route):
    """200,000 alloc/free pairs on one stream: host RSS stays flat (an event per free cost
    +100 MB); reports the first allocation on another stream afterwards (was an 86 ms stall)."""
    for _ in range(2000):
        torch.empty(256, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    before = _rss_bytes()
    for _ in range(200_000):
        torch.empty(256, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    grown = _rss_bytes() - before
    other = torch.cuda.Stream()
    start = time.perf_counter()
    with torch.cuda.stream(other):
        z = torch.empty(256, dtype=torch.uint8, device="cuda")
    first_ms = (time.perf_counter() - start) * 1e3
    del z
    return grown < 16 * MiB, (f"host RSS {grown / MiB:+.1f} MiB over 200,000 pairs; first "
                              f"allocation on another stream {first_ms:.2f} ms (information)")


def check_per_thread_streams(torch, route):
    """Two threads on cudaStreamPerThread: thread 2 does not get the block thread 1's stream
    still writes."""
    n = 64 * MiB
    per_thread = torch.cuda.ExternalStream(2)  # cudaStreamPerThread
    freed = threading.Event()
    done = threading.Event()
    seen = {}

    def first():
        with torch.cuda.stream(per_thread):
            x = torch.empty(n, dtype=torch.uint8, device="cuda")
            torch.cuda._sleep(SLEEP_CYCLES)
            x.fill_(1)  # thread 1's own stream writes x after about a second
            seen["first"] = x.data_ptr()
            del x
            freed.set()
            done.wait()
            torch.cuda.current_stream().synchronize()

    def second():
        freed.wait()
        with torch.cuda.stream(per_thread):
            y = torch.empty(n, dtype=torch.uint8, device="cuda")
            seen["second"] = y.data_ptr()
            y.fill_(2)
            torch.cuda.current_stream().synchronize()
            done.set()
            seen["y"] = y

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    shared = seen["first"] == seen["second"]
    intact = int(seen["y"].min().item()) == 2
    return not shared and intact, (f"block {'SHARED' if shared else 'not shared'} between the two "
                                   f"threads' streams; thread 2's tensor "
                                   f"{'intact' if intact else 'OVERWRITTEN'}")


def check_graph_capture(torch, route):
    """Capture in global mode (PyTorch's default) works, a captured graph replays correctly,
    and its memory stays private: tensors allocated afterwards are not overwritten by replays."""
    x = torch.ones(MiB, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as PyTorch's documentation asks
        for _ in range(3):
            (x * 2 + 1).sum()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        tmp = x * 2
        y = tmp + 1
        del tmp  # freed inside the capture: its block belongs to the graph
        w = y * 3
    x.fill_(5)
    graph.replay()
    torch.cuda.synchronize()
    first = bool(torch.all(y == 11)) and bool(torch.all(w == 33))
    others = [torch.full((MiB,), 7.0, device="cuda") for _ in range(8)]
    x.fill_(1)
    graph.replay()
    torch.cuda.synchronize()
    second = bool(torch.all(y == 3)) and bool(torch.all(w == 9))
    private = all(bool(torch.all(o == 7)) for o in others)
    del graph, y, w
    return first and second and private, (f"replay {'right' if first else 'WRONG'}, second replay "
                                          f"{'right' if second else 'WRONG'}, later tensors "
                                          f"{'intact' if private else 'OVERWRITTEN by a replay'}")


def check_concurrent_captures(torch, route):
    """Two threads capture two graphs at once on two streams (thread-local mode): each graph's
    blocks stay in its own pool; releasing one graph leaves the other replaying correctly."""
    n = MiB
    barrier = threading.Barrier(2)
    made = {}

    def capture(k):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            x = torch.full((n,), float(k), device="cuda")
            graph = torch.cuda.CUDAGraph()
            stream.synchronize()
            barrier.wait()
            graph.capture_begin(capture_error_mode="thread_local")
            barrier.wait()  # both captures underway
            a = x * 2
            b = a + k
            del a
            out = b * 1
            del b
            barrier.wait()
            graph.capture_end()
        made[k] = (graph, x, out, stream)

    threads = [threading.Thread(target=capture, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = []
    for k, (graph, x, out, stream) in made.items():
        graph.replay()
        torch.cuda.synchronize()
        results.append(bool(torch.all(out == 3 * k)))
    graph1 = made.pop(1)
    del graph1
    import gc

    gc.collect()
    torch.cuda.synchronize()
    fresh = [torch.full((n,), 9.0, device="cuda") for _ in range(8)]
    graph, x, out, _ = made[2]
    x.fill_(4)
    graph.replay()
    torch.cuda.synchronize()
    after = bool(torch.all(out == 10)) and all(bool(torch.all(f == 9)) for f in fresh)
    ok = all(results) and after
    return ok, (f"replays {'right' if all(results) else 'WRONG'}; after releasing graph 1, graph 2 "
                f"{'right and later tensors intact' if after else 'WRONG or later tensors overwritten'}")


# name, routes, check
CHECKS = (
    ("oom", ROUTES, check_oom),
    ("record_stream", ("plain", "hooks"), check_record_stream),
    ("empty_cache", ("plain", "hooks"), check_empty_cache),
    ("pairs_200k", ROUTES, check_pairs),
    ("per_thread_streams", ROUTES, check_per_thread_streams),
    ("graph_capture", ("hooks",), check_graph_capture),
    ("concurrent_captures", ("hooks",), check_concurrent_captures),
)


def plan(routes, only):
    return [(route, name, fn) for route in routes for name, on, fn in CHECKS
            if route in on and (not only or name in only)]


def install(route, library, python_dir):
    """Swaps the allocator for `route`, before CUDA is initialised."""
    import torch

    if route == "three-line":
        alloc = torch.cuda.memory.CUDAPluggableAllocator(
            library, "memarena_cuda_malloc", "memarena_cuda_free")
        torch.cuda.memory.change_current_allocator(alloc)
        return torch
    sys.path.insert(0, python_dir)
    import memarena_torch_hooks

    memarena_torch_hooks.install(library, hooks=(route == "hooks"))
    return torch


def run_child(args):
    route, name = args.child
    fn = dict((n, f) for n, _, f in CHECKS)[name]
    try:
        torch = install(route, args.library, args.python_dir)
        ok, detail = fn(torch, route)
    except Exception as e:  # noqa: BLE001 - a check that throws has failed
        ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    print(f"RESULT {'PASS' if ok else 'FAIL'} {detail}", flush=True)
    os._exit(0)  # skip teardown: a broken CUDA context may hang in destructors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=os.environ.get("MEMARENA_CUDA_LIBRARY"),
                        help="path of libmemarena_cuda.so")
    parser.add_argument("--python-dir", default=os.path.join(here, "..", "..", "cuda", "python"),
                        help="folder of memarena_torch_hooks.py")
    parser.add_argument("--routes", default=",".join(ROUTES), help="comma-separated routes")
    parser.add_argument("--only", default="", help="comma-separated check names")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per check")
    parser.add_argument("--dry-run", action="store_true", help="list the checks and exit")
    parser.add_argument("--child", nargs=2, metavar=("ROUTE", "CHECK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
    routes = [r for r in args.routes.split(",") if r]
    unknown = [r for r in routes if r not in ROUTES]
    only = [c for c in args.only.split(",") if c]
    unknown += [c for c in only if c not in dict((n, f) for n, _, f in CHECKS)]
    if unknown:
        parser.error(f"unknown route or check {', '.join(unknown)} (routes: {', '.join(ROUTES)}; "
                     f"checks: {', '.join(n for n, _, _ in CHECKS)})")
    checks = plan(routes, only)
    if args.dry_run:
        for route, name, fn in checks:
            print(f"would run {route}/{name}: {' '.join(fn.__doc__.split())}")
        print(f"torch_cuda_checks: {len(checks)} checks planned (dry run)")
        return 0
    if not args.library or not os.path.isfile(args.library):
        parser.error(f"--library: libmemarena_cuda.so not found at {args.library!r}")
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda, "
         "torch.cuda.device_count())"], capture_output=True, text=True)
    found = probe.stdout.split()
    if probe.returncode != 0 or len(found) != 3 or found[1] == "None" or found[2] == "0":
        why = (probe.stderr.strip().splitlines() or ["no output"])[-1] if probe.returncode else (
            f"torch {found[0]} with CUDA {found[1]} sees {found[2]} devices")
        print(f"FAIL torch_cuda_checks: no CUDA build of PyTorch with a device in "
              f"{sys.executable} ({why}); nothing checked")
        return 1
    print(f"torch {found[0]} (CUDA {found[1]}), {found[2]} devices", flush=True)
    passed = failed = 0
    compiled = False
    for route, name, _ in checks:
        # The first hooks check compiles the helper (a minute or two): give it longer.
        timeout = args.timeout * 3 if route == "hooks" and not compiled else args.timeout
        compiled = compiled or route == "hooks"
        cmd = [sys.executable, os.path.abspath(__file__), "--child", route, name,
               "--library", os.path.abspath(args.library), "--python-dir",
               os.path.abspath(args.python_dir)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
            if lines:
                verdict, _, detail = lines[-1][len("RESULT "):].partition(" ")
            else:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                verdict, detail = "FAIL", f"exit {done.returncode}: {tail[:200]}"
        except subprocess.TimeoutExpired:
            verdict, detail = "FAIL", f"timed out after {timeout} s"
        print(f"{verdict} {route}/{name}: {detail}", flush=True)
        passed += verdict == "PASS"
        failed += verdict != "PASS"
    print(f"torch_cuda_checks: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
