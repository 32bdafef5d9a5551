#!/usr/bin/env python3
"""Side-by-side figures of one Google Benchmark program built from two trees (A = before,
B = after): runs A and B alternately, one repetition each per round, so drift on a busy
machine hits both alike, and prints per benchmark the median ns per item of each and B/A.

Usage: bench/ab_compare.py A_BINARY B_BINARY [--rounds N] [-- BENCHMARK_ARGS...]
Example: bench/ab_compare.py base/build/bench/host/host_bench build/bench/host/host_bench \\
             --rounds 5 -- --benchmark_filter='BM_(Pair|Batch)<Host' --benchmark_min_time=0.2
"""
import json
import statistics
import subprocess
import sys


def run(binary, args):
    out = subprocess.run([binary, "--benchmark_format=json", *args], check=True,
                         capture_output=True, text=True).stdout
    figures = {}
    for b in json.loads(out)["benchmarks"]:
        per_item = b["real_time"] if "items_per_second" not in b else 1e9 / b["items_per_second"]
        figures[b["name"]] = per_item
    return figures


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if len(argv) < 2:
        sys.exit(__doc__)
    a, b = argv[0], argv[1]
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 5
    samples = {"A": {}, "B": {}}
    for _ in range(rounds):
        for side, binary in (("A", a), ("B", b)):
            for name, value in run(binary, extra).items():
                samples[side].setdefault(name, []).append(value)
    print(f"{'benchmark':<48} {'A ns/item':>10} {'B ns/item':>10} {'B/A':>6}   (medians of {rounds})")
    for name, values in samples["A"].items():
        ma = statistics.median(values)
        mb = statistics.median(samples["B"].get(name, [float("nan")]))
        print(f"{name:<48} {ma:>10.2f} {mb:>10.2f} {mb / ma:>6.3f}")


if __name__ == "__main__":
    main()
