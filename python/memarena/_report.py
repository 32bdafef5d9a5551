"""The pytest guard's report: JSON (every test's baseline, peak, growth, budget, release) and,
beside it, an HTML page with a timeline per side: each test's baseline and peak in run
order, the tests over budget in red, and the headroom left to the device limit."""

import html
import json
import os

from memarena._sizes import format_bytes

_WIDTH, _HEIGHT, _LEFT, _TOP, _BOTTOM = 960, 260, 90, 20, 30
_BASELINE, _GROWTH, _OVER = "#9aa5b1", "#3b82c4", "#d62728"


def html_path_for(json_path):
    root, ext = os.path.splitext(json_path)
    return (root if ext.lower() == ".json" else json_path) + ".html"


def write_report(path, summary):
    """Writes `summary` to `path` (JSON) and its HTML beside it; returns both paths."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(summary, out, indent=2)
        out.write("\n")
    page = html_path_for(path)
    with open(page, "w", encoding="utf-8") as out:
        out.write(_page(summary))
    return path, page


def _timeline(tests, side):
    """An SVG bar per test: the baseline in grey, the growth above it in blue or, over
    budget, in red; a dashed line at the device limit when it is known."""
    rows = [t[side] for t in tests if t[side] is not None]
    if not rows:
        return f"<p>No {side} memory was measured (no device, or no PyTorch with CUDA).</p>"
    limit = max((r.get("limit") or 0 for r in rows), default=0)
    top = max([r["peak"] for r in rows] + [limit, 1])
    plot_w, plot_h = _WIDTH - _LEFT - 10, _HEIGHT - _TOP - _BOTTOM
    step = plot_w / len(tests)

    def y(value):
        return _TOP + plot_h - plot_h * value / top

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
             f'class="timeline" data-side="{side}">',
             f'<text x="4" y="{_TOP + 4}" font-size="11">{html.escape(format_bytes(top))}</text>',
             f'<text x="4" y="{_TOP + plot_h}" font-size="11">0 B</text>',
             f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_WIDTH - 10}" y2="{_TOP + plot_h}" '
             f'stroke="#333"/>']
    for index, test in enumerate(tests):
        r = test[side]
        if r is None:
            continue
        x, w = _LEFT + index * step, max(step * 0.8, 1)
        name = html.escape(test["test"], quote=True)
        title = (f"{name}: baseline {format_bytes(r['baseline'])}, peak {format_bytes(r['peak'])}"
                 f", growth {format_bytes(r['growth'])}")
        parts.append(f'<rect x="{x:.1f}" y="{y(r["baseline"]):.1f}" width="{w:.1f}" '
                     f'height="{y(0) - y(r["baseline"]):.1f}" fill="{_BASELINE}">'
                     f'<title>{title}</title></rect>')
        color = _OVER if r["over_budget"] else _GROWTH
        parts.append(f'<rect x="{x:.1f}" y="{y(r["peak"]):.1f}" width="{w:.1f}" '
                     f'height="{y(r["baseline"]) - y(r["peak"]):.1f}" fill="{color}" '
                     f'class="{"over" if r["over_budget"] else "within"}"><title>{title}'
                     f'</title></rect>')
    if limit:
        parts.append(f'<line x1="{_LEFT}" y1="{y(limit):.1f}" x2="{_WIDTH - 10}" '
                     f'y2="{y(limit):.1f}" stroke="{_OVER}" stroke-dasharray="6,4">'
                     f'<title>device limit {html.escape(format_bytes(limit))}</title></line>')
    parts.append("</svg>")
    return "\n".join(parts)


def _cell(value):
    return f"<td>{html.escape(format_bytes(value))}</td>"


def _table(tests):
    head = ("<tr><th>#</th><th>test</th><th>outcome</th><th>host baseline</th><th>host peak</th>"
            "<th>host growth</th><th>host budget</th><th>device baseline</th><th>device peak</th>"
            "<th>device growth</th><th>device budget</th><th>device headroom</th></tr>")
    rows = [head]
    for index, t in enumerate(tests, 1):
        h, d = t["host"], t["device"] or {}
        over = h["over_budget"] or d.get("over_budget", False)
        style = ' class="over" style="color:#d62728"' if over else ""
        cells = [_cell(h[k]) for k in ("baseline", "peak", "growth", "budget")]
        cells += [_cell(d.get(k)) for k in ("baseline", "peak", "growth", "budget", "headroom")]
        rows.append(f"<tr{style}><td>{index}</td><td>{html.escape(t['test'])}</td>"
                    f"<td>{html.escape(t.get('outcome', '-'))}</td>{''.join(cells)}</tr>")
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def headroom_text(tests):
    """'device limit L; the highest peak P (test T) left H of headroom', or None when no
    device limit is known."""
    measured = [t for t in tests if t["device"] and t["device"].get("limit")]
    if not measured:
        return None
    worst = max(measured, key=lambda t: t["device"]["peak"])
    d = worst["device"]
    return (f"device limit {format_bytes(d['limit'])}; the highest peak {format_bytes(d['peak'])}"
            f" ({worst['test']}) left {format_bytes(d['headroom'])} of headroom")


def _headroom_line(tests):
    text = headroom_text(tests)
    return f"<p>{html.escape(text or 'Device limit unknown: no headroom to show.')}</p>"


def _page(summary):
    tests = summary["tests"]
    over = [t["test"] for t in tests
            if t["host"]["over_budget"] or (t["device"] or {}).get("over_budget")]
    over_text = ", ".join(html.escape(name) for name in over) or "none"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8"/>',
        "<title>memarena pytest memory report</title>",
        "<style>body{font-family:sans-serif} td,th{padding:2px 8px;text-align:right} "
        "td:nth-child(2){text-align:left}</style></head><body>",
        f"<h1>memarena: {len(tests)} tests</h1>",
        f"<p>Host measured by: {html.escape(summary['host_source']['what'])}. Host budget "
        f"{html.escape(format_bytes(summary['host_budget']))}, device budget "
        f"{html.escape(format_bytes(summary['device_budget']))} (peak above each test's "
        f"baseline). Release between tests: {'on' if summary['release_between_tests'] else 'off'}"
        f".</p>",
        f'<p class="over-list">Over budget: <span style="color:{_OVER}">{over_text}</span></p>',
        "<h2>Host: baseline and peak per test, in run order</h2>", _timeline(tests, "host"),
        "<h2>Device: baseline and peak per test, in run order</h2>", _timeline(tests, "device"),
        _headroom_line(tests), "<h2>All tests</h2>", _table(tests), "</body></html>", ""])
