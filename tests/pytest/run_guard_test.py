"""pytest_guard_test: runs pytest with the memarena plugin on the small suites beside this
file and checks what it reports.

1. Host suite under LD_PRELOAD=libmemarena_malloc.so with a 32 MiB host budget: every test's
   host peak comes from the drop-in's C API; exactly the two tests over budget fail (the
   64 MiB one and the one whose marker sets 1 MiB), each named with its peak; the JSON lists
   all ten tests and the HTML draws them, two in red.
2. The same suite without the drop-in: peaks from the resident set's high-water mark.
3. Device suites over libmemarena_cuda_fake.so and over a stand-in torch.cuda with a 32 MiB device budget: exactly the test
   that peaks 64 MiB above the 16 MiB of weights fails; the release after it brings the next
   test's baseline back to the weights, and without release it stays at the peak.
4. A bad budget is a usage error naming the option.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

MIB = 1 << 20
SVG = "{http://www.w3.org/2000/svg}"
failures = []


def check(condition, what, detail=""):
    if not condition:
        failures.append(f"FAIL: {what}\n{detail}")
    return condition


def run_pytest(args, suite, extra_env, extra_args):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = args.python_dir
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra_env)
    command = [sys.executable, "-m", "pytest", "-p", "memarena.pytest", "-p", "no:cacheprovider",
               "-q", "--memarena-top=100", *extra_args]
    result = subprocess.run(command, cwd=os.path.join(args.suites, suite), env=env, text=True,
                            capture_output=True, timeout=300)
    return result, result.stdout + result.stderr


def run_suite(args, suite, env, extra_args, report_path, summary, count, side, source):
    """Runs `suite`; checks that pytest reports `summary` and that the JSON lists `count` tests,
    each with its `side` measured from `source`. Returns ({short name: record}, output), or
    (None, output) when there is no report to check further."""
    result, output = run_pytest(args, suite, env, [*extra_args, f"--memarena-report={report_path}"])
    check(result.returncode == 1 and summary in output,
          f"{suite} {' '.join(extra_args)}: pytest exits 1 with '{summary}'", output)
    if not check(os.path.exists(report_path), f"{report_path} written", output):
        return None, output
    with open(report_path, encoding="utf-8") as report:
        tests = {t["test"].split("::")[-1]: t for t in json.load(report)["tests"]}
    check(len(tests) == count, f"the JSON lists all {count} tests", str(sorted(tests)))
    for name, t in tests.items():
        if check(t[side] is not None and t[side]["source"] == source,
                 f"{name}: {side} peak measured from {source}", str(t[side])):
            check(t[side]["peak"] >= t[side]["baseline"] > 0, f"{name}: {side} peak and baseline",
                  str(t[side]))
    if any(t[side] is None for t in tests.values()):
        return None, output
    return tests, output


def check_html(path, side, tests, over):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as error:
        check(False, f"{path} parses as XML", str(error))
        return
    timelines = [svg for svg in root.iter(SVG + "svg") if svg.get("data-side") == side]
    if not check(len(timelines) == 1, f"{path} has one {side} timeline", str(len(timelines))):
        return
    rects = [r for r in timelines[0].iter(SVG + "rect") if r.get("class") in ("over", "within")]
    check(len(rects) == tests, f"{path} draws one {side} growth bar per test ({tests})",
          str(len(rects)))
    red = [r for r in rects if r.get("class") == "over"]
    check(len(red) == over and all(r.get("fill") == "#d62728" for r in red),
          f"{path} draws the {over} tests over the {side} budget in red", str(len(red)))


def host_suite(args):
    report_path = os.path.join(args.out, "host", "report.json")
    tests, output = run_suite(args, "suite", {"LD_PRELOAD": args.dropin},
                              ["--memarena-host-budget=32MiB"], report_path, "2 failed, 8 passed",
                              10, "host", "memarena")
    if tests is None:
        return
    for name, t in tests.items():
        # Named in the end-of-run table with its peak.
        check(re.search(re.escape(fmt(t["host"]["peak"])) + r"\s+\S+ \S+\s+" +
                        re.escape(t["test"]), output) is not None,
              f"{name}: its host peak is in the summary table", output)
    failed = sorted(n for n, t in tests.items() if t["outcome"] == "failed")
    check(failed == ["test_marker_budget", "test_peaky"], "exactly the tests over budget fail",
          str(failed))
    peaky = tests.get("test_peaky")
    if peaky:
        growth = peaky["host"]["growth"]
        check(64 * MIB <= growth < 72 * MIB, "test_peaky grows the heap by its 64 MiB", str(growth))
        check(f"memarena: test_host_suite.py::test_peaky took host memory to a peak of "
              f"{fmt(peaky['host']['peak'])} from a baseline of {fmt(peaky['host']['baseline'])}"
              f" at its start: {fmt(growth)} more, over its host budget of 32.00 MiB" in output,
              "the failure names test_peaky, its peak, baseline and budget", output)
    check("over its host budget of 1.00 MiB" in output, "the marker's budget applies", output)
    for name, t in tests.items():
        if name.startswith("test_small"):
            check(t["host"]["growth"] < 8 * MIB, f"{name}: small growth", str(t["host"]))
    check_html(report_path[:-len(".json")] + ".html", "host", 10, 2)


def rss_suite(args):
    report_path = os.path.join(args.out, "rss", "report.json")
    tests, _ = run_suite(args, "suite", {}, ["--memarena-host-budget=32MiB", "-k", "not marker"],
                         report_path, "1 failed, 8 passed", 9, "host", "rss")
    if tests is None:
        return
    check(tests["test_peaky"]["outcome"] == "failed", "without the drop-in test_peaky fails",
          str(tests["test_peaky"]))
    peaky = tests.get("test_peaky", {}).get("host", {})
    check(peaky.get("growth", 0) >= 60 * MIB, "test_peaky's 64 MiB show in the RSS high-water",
          str(peaky))


def device_suite(args, release):
    report_path = os.path.join(args.out, f"device-{release}", "report.json")
    extra = ["--memarena-device-budget=32MiB"] + ([] if release else ["--memarena-no-release"])
    tests, output = run_suite(args, "device_suite", {"MEMARENA_FAKE_CUDA": args.fake_cuda}, extra,
                              report_path, "1 failed, 3 passed", 4, "device", "memarena_cuda")
    if tests is None:
        return
    first = tests["test_device_small"]["device"]
    check(first["baseline"] == 16 * MIB and first["growth"] == 4 * MIB,
          "the first test, whose setup loaded the device, is measured from its body's start",
          str(first))
    peaky, after = tests["test_device_peaky"]["device"], tests["test_device_after_peaky"]["device"]
    check(tests["test_device_peaky"]["outcome"] == "failed", "test_device_peaky fails", output)
    check(peaky["growth"] == 64 * MIB, "test_device_peaky grows device memory by 64 MiB",
          str(peaky))
    check(peaky.get("headroom") == 1024 * MIB - peaky["peak"], "headroom to the 1 GiB limit",
          str(peaky))
    if release:
        check((peaky["baseline"], peaky["peak"]) == (16 * MIB, 80 * MIB),
              "test_device_peaky: 16 MiB baseline (the weights), 80 MiB peak", str(peaky))
        check("memarena: test_device_suite.py::test_device_peaky took device memory to a peak of "
              "80.00 MiB from a baseline of 16.00 MiB at its start: 64.00 MiB more, over its "
              "device budget of 32.00 MiB" in output, "the device failure names test, peak, "
              "baseline and budget", output)
        check(peaky["released"] == 64 * MIB and after["baseline"] == 16 * MIB,
              "the release after test_device_peaky brings the baseline back to the weights",
              f"{peaky}\n{after}")
        check_html(report_path[:-len(".json")] + ".html", "device", 4, 1)
        check("device limit 1.00 GiB; the highest peak 80.00 MiB (test_device_suite.py::"
              "test_device_peaky) left 944.00 MiB of headroom" in output,
              "the summary shows the headroom left to the device limit", output)
    else:
        # test_device_small's 4 MiB region stays too: 16 + 4 + 64 MiB.
        check(peaky["released"] == 0 and after["baseline"] == peaky["peak"] == 84 * MIB,
              "without release the next test starts from the cached peak", f"{peaky}\n{after}")


def torch_suite(args):
    report_path = os.path.join(args.out, "torch", "report.json")
    tests, output = run_suite(args, "torch_suite", {}, ["--memarena-device-budget=32MiB"],
                              report_path, "1 failed, 2 passed", 3, "device", "torch")
    if tests is None:
        return
    peaky, after = tests["test_torch_peaky"]["device"], tests["test_torch_after_peaky"]["device"]
    check((peaky["baseline"], peaky["peak"], peaky["growth"]) == (16 * MIB, 80 * MIB, 64 * MIB),
          "test_torch_peaky: max_memory_reserved since the reset, over the 16 MiB baseline",
          str(peaky))
    check(peaky["released"] == 64 * MIB and after["baseline"] == 16 * MIB,
          "empty_cache after test_torch_peaky brings the next baseline back to the weights",
          f"{peaky}\n{after}")
    check("memarena: test_torch_suite.py::test_torch_peaky took device memory to a peak of "
          "80.00 MiB from a baseline of 16.00 MiB" in output, "the torch failure names the test",
          output)


def bad_budget(args):
    result, output = run_pytest(args, "suite", {}, ["--memarena-host-budget=lots", "-k", "peaky"])
    check(result.returncode == 4 and "--memarena-host-budget" in output and "lots" in output,
          "a bad budget is a usage error naming the option", output)


def fmt(count):
    sys.path.insert(0, ARGS.python_dir)
    from memarena._sizes import format_bytes  # pylint: disable=import-outside-toplevel
    return format_bytes(count)


def main():
    global ARGS  # pylint: disable=global-statement
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--python-dir", "--dropin", "--fake-cuda", "--suites", "--out"):
        parser.add_argument(name, required=True)
    ARGS = parser.parse_args()
    host_suite(ARGS)
    rss_suite(ARGS)
    device_suite(ARGS, release=True)
    device_suite(ARGS, release=False)
    torch_suite(ARGS)
    bad_budget(ARGS)
    for failure in failures:
        print(failure)
    print(f"pytest_guard_test: {len(failures)} failed checks")
    return 1 if failures else 0


ARGS = None
if __name__ == "__main__":
    sys.exit(main())
