#!/usr/bin/env python3
"""The CLI's HTML and SVG outputs are well-formed XML with the expected content.

Runs `memarena demo`, `replay --report`, `compare --report` and `plan --svg`, parses each
output with xml.etree, and checks the pictures: polylines for in use / held / ceiling, the
release and OOM markers, one rectangle per planned tensor and the lower-bound line.
Usage: check_reports.py MEMARENA DATA_DIR OUT_DIR
"""
import csv
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def run(args, cwd):
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    check(result.returncode == 0, f"{args} exited {result.returncode}: {result.stderr}")
    return result


def parse(path):
    try:
        return ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        check(False, f"{path} is not well-formed XML: {e}")
        return None


def titles(root, tag):
    return [t.text or "" for el in root.iter(SVG + tag) for t in el.iter(SVG + "title")]


def check_memory_holders(root, trace_path, what):
    """The "who holds this memory" sections: a size histogram whose allocation counts add up
    to the trace's allocations, and the largest live blocks at the peak, largest first."""
    with open(trace_path) as f:
        allocs = sum(1 for row in csv.DictReader(f) if row["Action"] == "allocate")
    headings = [h.text or "" for h in root.iter("h2")]
    check(any("allocation sizes" in h for h in headings), f"{what} report has the size histogram")
    check(any("largest live blocks at the peak" in h for h in headings),
          f"{what} report lists the largest live blocks at the peak")
    tables = list(root.iter("table"))
    check(len(tables) >= 3, f"{what} report has its results, histogram and largest-blocks tables")
    if len(tables) < 3:
        return
    hist_rows = list(tables[-2].iter("tr"))[1:]
    counted = sum(int(list(r.iter("td"))[1].text) for r in hist_rows)
    check(counted == allocs, f"{what} histogram counts {counted} allocations, the trace has {allocs}")
    largest_rows = list(tables[-1].iter("tr"))[1:]
    check(0 < len(largest_rows) <= 10, f"{what} lists 1-10 largest blocks, got {len(largest_rows)}")


def check_segment_maps(root, arenas, what):
    """One segment map per BFC arena: a heading, and a table that ends with the total over
    all its segments (exact numbers are checked on a tiny trace in cli_test)."""
    headings = [h.text or "" for h in root.iter("h2")]
    maps = [h for h in headings if "segments at the peak" in h]
    check(len(maps) == arenas, f"{what} report has {arenas} segment maps, got {len(maps)}")
    tables = [t for t in root.iter("table")
              if [th.text for th in t.iter("th")][:2] == ["segment", "size"]]
    check(len(tables) == arenas, f"{what} report has {arenas} segment tables, got {len(tables)}")
    for table in tables:
        rows = [[td.text for td in tr.iter("td")] for tr in list(table.iter("tr"))[1:]]
        check(len(rows) >= 2 and rows[-1][0].startswith("all "),
              f"{what} segment table lists segments and ends with the total row")


def main():
    memarena, data, out = (os.path.abspath(a) for a in sys.argv[1:4])
    os.makedirs(out, exist_ok=True)

    # The demo: self-contained HTML with one timeline per run plus the overlay.
    # 4 MiB is below the scenario's peak in use (about 7 MiB), so OOMs are certain whatever the
    # allocator's footprint.
    run([memarena, "demo", "--cases", "60", "--requests", "10", "--batched-requests", "10",
         "--ceiling", "4MiB", "--no-progress"], cwd=out)
    html = parse(os.path.join(out, "memarena-demo.html"))
    if html is not None:
        check(html.tag == "html", "demo root is <html>")
        svgs = list(html.iter(SVG + "svg"))
        check(len(svgs) == 12,
              f"demo has 12 charts (2 test-suite runs, 2 x 4 inference runs, 2 overlays), got {len(svgs)}")
        text = ET.tostring(html, encoding="unicode")
        check("http" not in text.replace("http://www.w3.org/2000/svg", ""),
              "demo references no external resource")
        check(not list(html.iter("script")), "demo has no script")
        tables = list(html.iter("table"))
        check(len(tables) == 3, f"demo has 3 tables, got {len(tables)}")
        releases = [t for t in titles(html, "path") if t.startswith("release after event")]
        ooms = [t for t in titles(html, "path") if t.startswith("OOM at event")]
        check(len(releases) > 0, "demo marks releases")
        check(len(ooms) > 0, "demo marks OOMs (4 MiB ceiling)")
        legends = [t.text or "" for t in html.iter(SVG + "text")]
        check(any(l.startswith("ceiling 4.00 MiB") for l in legends), "demo draws the ceiling")
        for label in ("held", "in use"):
            check(label in legends, f"demo legend has '{label}'")
        for svg in svgs:
            check(len(list(svg.iter(SVG + "polyline"))) >= 2, "every chart has in use and held lines")

    # replay --report on a sample trace, with a ceiling so OOMs are marked.
    report = os.path.join(out, "replay.html")
    run([memarena, "replay", os.path.join(data, "dynamic_shapes.csv"), "--allocator", "bfc",
         "--config", "max_mem:16MiB", "--report", report], cwd=out)
    root = parse(report)
    if root is not None:
        # The timeline has lines; the segment map only bars.
        svgs = [svg for svg in root.iter(SVG + "svg") if list(svg.iter(SVG + "polyline"))]
        check(len(svgs) == 1, "replay report has one timeline chart")
        check(any(t.startswith("OOM at event") for t in titles(root, "path")),
              "replay report marks the OOMs under max_mem")
        lines = list(root.iter(SVG + "polyline"))
        check(len(lines) == 3, f"replay chart has held, in use and ceiling lines, got {len(lines)}")
        check_memory_holders(root, os.path.join(data, "dynamic_shapes.csv"), "replay")
        check_segment_maps(root, 1, "replay")

    # compare --report: one table with every allocator and strategy, one picture.
    report = os.path.join(out, "compare.html")
    run([memarena, "compare", os.path.join(data, "recorded_python.csv"), "--report", report,
         "--no-progress"], cwd=out)
    root = parse(report)
    if root is not None:
        timelines = [svg for svg in root.iter(SVG + "svg") if list(svg.iter(SVG + "polyline"))]
        check(len(timelines) == 1, "compare report has one timeline picture")
        rows = list(next(root.iter("table")).iter("tr"))
        check(len(rows) == 7, f"compare table has a header and 6 allocators, got {len(rows)}")
        check_memory_holders(root, os.path.join(data, "recorded_python.csv"), "compare")
        check_segment_maps(root, 3, "compare")
        check(len(list(root.iter(SVG + "polyline"))) == 7, "compare picture: 6 held lines + in use")

    # plan --svg: one rectangle per tensor (plus the background) and the lower-bound line.
    svg_path = os.path.join(out, "plan.svg")
    lifetimes = os.path.join(data, "lifetimes_small.csv")
    run([memarena, "plan", lifetimes, "--svg", svg_path, "--budget-ms", "100"], cwd=out)
    root = parse(svg_path)
    if root is not None:
        check(root.tag == SVG + "svg", "plan output is an <svg>")
        with open(lifetimes) as f:
            tensors = sum(1 for _ in csv.DictReader(f))
        rects = list(root.iter(SVG + "rect"))
        check(len(rects) == tensors + 1, f"plan has {tensors} tensor boxes + background, got {len(rects)}")
        labels = [t.text or "" for t in root.iter(SVG + "text")]
        check(any(l.startswith("lower bound") for l in labels), "plan labels the lower bound")
        check(any(l.startswith("arena ") for l in labels), "plan labels the arena size")
        dashed = [l for l in root.iter(SVG + "line") if l.get("stroke-dasharray")]
        check(len(dashed) == 1, "plan draws the lower bound as a dashed line")

    # JSON outputs parse as JSON too.
    for args in (["replay", os.path.join(data, "rmm_handwritten.csv"), "--json"],
                 ["compare", os.path.join(data, "rmm_handwritten.csv"), "--json", "--no-progress"],
                 ["plan", lifetimes, "--json", "--greedy"]):
        result = run([memarena] + args, cwd=out)
        try:
            value = json.loads(result.stdout)
            if args[0] == "plan":
                for key in ("arena_bytes", "lower_bound_bytes", "valid", "seconds"):
                    check(key in value, f"plan --json has {key}")
            else:
                check(all("stats" in r for r in value["results"]), f"{args[0]} --json has stats")
        except json.JSONDecodeError as e:
            check(False, f"{args[0]} --json is not JSON: {e}")

    print("report checks:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
