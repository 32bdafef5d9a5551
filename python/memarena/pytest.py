"""The pytest memory guard: ``pytest -p memarena.pytest``.

Per test it records the host peak and the device peak above the baseline the test started
from, fails the test when a budget is exceeded (naming the test, its peak, its baseline and
the budget), releases cached memory after the test, and writes a JSON and HTML report.
Options: --memarena-host-budget=SIZE, --memarena-device-budget=SIZE, --memarena-report=PATH;
per test: @pytest.mark.memarena(host_budget="64MiB", device_budget="1GiB").
A budget limits the peak growth (peak minus baseline), as MEMARENA_TEST_BUDGET and
MEMARENA_TEST_DEVICE_BUDGET do in the gtest guard.
"""

import gc
import time

import pytest

from memarena import _probes
from memarena._report import headroom_text, write_report
from memarena._sizes import format_bytes, parse_size

_MARKER_HELP = ("memarena(host_budget=SIZE, device_budget=SIZE): this test's memory budgets, "
                "over --memarena-host-budget / --memarena-device-budget")


def pytest_addoption(parser):
    group = parser.getgroup("memarena", "memarena memory guard")
    group.addoption("--memarena-host-budget", metavar="SIZE", default=None,
                    help="fail a test whose host peak rises more than SIZE above its baseline")
    group.addoption("--memarena-device-budget", metavar="SIZE", default=None,
                    help="fail a test whose device peak (held) rises more than SIZE above its "
                         "baseline")
    group.addoption("--memarena-report", metavar="PATH", default=None,
                    help="write the per-test JSON report to PATH and the HTML report beside it")
    group.addoption("--memarena-no-release", action="store_true", default=False,
                    help="keep cached memory between tests (to see the baseline grow)")
    group.addoption("--memarena-top", metavar="N", type=int, default=10,
                    help="how many of the heaviest tests to list at the end (default 10)")


def _budget(config_or_marker, key, option):
    value = config_or_marker(key)
    if value is None:
        return None
    try:
        return parse_size(option, value)
    except ValueError as error:
        raise pytest.UsageError(f"memarena: {error}") from None


def pytest_configure(config):
    config.addinivalue_line("markers", _MARKER_HELP)
    host = _budget(config.getoption, "memarena_host_budget", "--memarena-host-budget")
    device = _budget(config.getoption, "memarena_device_budget", "--memarena-device-budget")
    guard = MemoryGuard(config, host, device)
    config.pluginmanager.register(guard, "memarena-guard")


class MemoryGuard:
    """Holds the run's records; one instance per pytest session."""

    def __init__(self, config, host_budget, device_budget):
        self.config = config
        self.host_budget = host_budget
        self.device_budget = device_budget
        self.release = not config.getoption("memarena_no_release")
        self.report_path = config.getoption("memarena_report")
        self.top = config.getoption("memarena_top")
        self.host = _probes.find_host_probe()
        self.device = None
        self.records = []
        self.started = time.monotonic()
        self._current = {}
        self.written = None

    def _budgets_of(self, item):
        host, device = self.host_budget, self.device_budget
        for marker in item.iter_markers("memarena"):
            unknown = set(marker.kwargs) - {"host_budget", "device_budget"}
            if unknown or marker.args:
                raise pytest.UsageError(
                    f"memarena: bad marker on {item.nodeid}: takes only host_budget=SIZE and "
                    f"device_budget=SIZE, got {marker.args or ''}{sorted(unknown) or ''}")
            where = f"the memarena marker of {item.nodeid}"
            if "host_budget" in marker.kwargs:
                host = _budget(marker.kwargs.get, "host_budget", f"host_budget in {where}")
            if "device_budget" in marker.kwargs:
                device = _budget(marker.kwargs.get, "device_budget", f"device_budget in {where}")
            break  # the closest marker wins
        return host, device

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.device = _probes.find_device_probe()
        host_budget, device_budget = self._budgets_of(item)
        self._current[item.nodeid] = {
            "test": item.nodeid,
            "start_s": round(time.monotonic() - self.started, 6),
            "host": {"baseline": self.host.start(), "budget": host_budget, **self.host.describe()},
            "device_budget": device_budget,
            "device": None if self.device is None else {
                "baseline": self.device.start(), "budget": device_budget,
                **self.device.describe()},
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        # A device that appeared during setup (a session fixture that loads the model, or
        # imports torch) is measured from the start of the test body.
        record = self._current.get(item.nodeid)
        if record is None or record["device"] is not None:
            return
        self.device = _probes.find_device_probe()
        if self.device is not None:
            record["device"] = {"baseline": self.device.start(), "budget": record["device_budget"],
                                **self.device.describe()}

    @staticmethod
    def _measure(side, probe):
        peaks = probe.finish()
        side["peak"] = max(peaks["peak"], side["baseline"])
        side["peak_in_use"] = peaks.get("peak_in_use")
        side["growth"] = side["peak"] - side["baseline"]
        if peaks.get("limit"):
            side["limit"] = peaks["limit"]
            side["headroom"] = max(0, peaks["limit"] - side["peak"])
        side["over_budget"] = side["budget"] is not None and side["growth"] > side["budget"]

    @staticmethod
    def _failure(nodeid, name, side, option):
        return (f"memarena: {nodeid} took {name} memory to a peak of {format_bytes(side['peak'])} "
                f"from a baseline of {format_bytes(side['baseline'])} at its start: "
                f"{format_bytes(side['growth'])} more, over its {name} budget of "
                f"{format_bytes(side['budget'])} ({option} or the memarena marker; "
                f"measured: {side['what']})")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        record = self._current.get(item.nodeid)
        if call.when != "call" or record is None:
            return
        report = outcome.get_result()
        messages = []
        self._measure(record["host"], self.host)
        if record["host"]["over_budget"]:
            messages.append(self._failure(item.nodeid, "host", record["host"],
                                          "--memarena-host-budget"))
        if record["device"] is not None:
            self._measure(record["device"], self.device)
            if record["device"]["over_budget"]:
                messages.append(self._failure(item.nodeid, "device", record["device"],
                                              "--memarena-device-budget"))
        record["duration_s"] = round(call.duration, 6)
        if messages and report.passed:
            report.outcome = "failed"
            report.longrepr = "\n".join(messages)
        elif messages:
            report.sections.append(("memarena", "\n".join(messages)))
        record["outcome"] = report.outcome

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield
        record = self._current.pop(item.nodeid, None)
        if record is None or "outcome" not in record:
            return  # setup failed or was skipped: nothing was measured
        if self.release:
            gc.collect()  # objects in reference cycles (tensors among them) are freed only here
        record["host"]["released"] = self.host.release() if self.release else 0
        if record["device"] is not None:
            record["device"]["released"] = self.device.release() if self.release else 0
        self.records.append(record)

    def pytest_sessionfinish(self):
        if self.report_path:
            self.written = write_report(self.report_path, self._summary())

    def pytest_terminal_summary(self, terminalreporter):
        if not self.records:
            return
        write = terminalreporter.write_line
        terminalreporter.section("memarena")
        has_device = any(r["device"] is not None for r in self.records)
        heaviest = sorted(self.records, key=lambda r: (
            -(r["host"]["growth"] + (r["device"]["growth"] if r["device"] else 0)), r["test"]))
        write(f"heaviest {min(self.top, len(heaviest))} of {len(heaviest)} tests "
              f"(host: {self.host.describe()['what']}"
              + (")" if not has_device else " | device)"))
        device_header = (f" | {'dev baseline':>12} {'dev peak':>12} {'dev growth':>12}"
                         if has_device else "")
        write(f"{'baseline':>12} {'peak':>12} {'growth':>12}{device_header}  test")
        for r in heaviest[:self.top]:
            h, d = r["host"], r["device"]
            device_columns = ""
            if has_device:
                device_columns = " | " + " ".join(
                    f"{format_bytes(d[k]) if d else '-':>12}" for k in ("baseline", "peak", "growth"))
            over = h["over_budget"] or (d is not None and d["over_budget"])
            write(f"{format_bytes(h['baseline']):>12} {format_bytes(h['peak']):>12} "
                  f"{format_bytes(h['growth']):>12}{device_columns}  {r['test']}"
                  + ("  OVER BUDGET" if over else ""))
        if has_device and headroom_text(self.records):
            write(headroom_text(self.records))
        if self.written:
            write(f"report: {self.written[0]} and {self.written[1]}")

    def _summary(self):
        return {"host_budget": self.host_budget, "device_budget": self.device_budget,
                "release_between_tests": self.release, "host_source": self.host.describe(),
                "tests": self.records}
