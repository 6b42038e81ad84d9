"""Server-rendered HTML for the dashboard pages without a template engine: every value goes
through `esc` (html.escape) on its way into markup, so nothing read from the store or a request
can inject markup or script. One stylesheet, no JavaScript."""
from __future__ import annotations

from html import escape
from urllib.parse import quote

NAV = [("/", "Overview"), ("/topics", "Topics"), ("/groups", "Groups"), ("/messages", "Messages"),
       ("/dlq", "DLQ"), ("/delay", "Delay queues"), ("/transactions", "Transactions"), ("/schemas", "Schemas"),
       ("/cluster", "Cluster"), ("/grpc", "gRPC"), ("/security", "Security")]
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")

STYLE = """body{font-family:system-ui,sans-serif;margin:0;color:#222}
nav{background:#1f2d3d;padding:.6em 1em}nav a{color:#fff;margin-right:1.2em;text-decoration:none}
nav a.here{font-weight:bold;border-bottom:2px solid #f90}main{padding:1em 1.5em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#eef}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ccc;border-radius:6px;padding:.6em 1em;min-width:9em}
.card b{display:block;font-size:1.4em}pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap;word-break:break-all}
form{margin:.5em 0 1em}input{margin-right:.5em}.note{color:#666}.refused{color:#b00}
svg.chart text{font-size:10px;fill:#555}svg.chart .axis{stroke:#999}.charts{display:flex;gap:2em;flex-wrap:wrap}"""


def esc(value) -> str:
    return escape("" if value is None else str(value), quote=True)


def link(path: str, text) -> str:
    return f'<a href="{esc(path)}">{esc(text)}</a>'


def q(value) -> str:
    """A path segment or query value, URL-quoted (then HTML-escaped by link)."""
    return quote(str(value), safe="")


def page(title: str, here: str, body: str) -> str:
    nav = "".join(f'<a href="{p}"{" class=here" if p == here else ""}>{esc(t)}</a>' for p, t in NAV)
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{esc(title)} · rocketgate</title>"
            f"<style>{STYLE}</style></head><body><nav>{nav}</nav><main><h1>{esc(title)}</h1>{body}</main></body></html>")


def table(rows: list[dict], columns: list[str], links: dict | None = None, numeric=()) -> str:
    """`links`: column -> fn(row) giving the href of that cell."""
    if not rows:
        return '<p class="note">(none)</p>'
    links = links or {}
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            text = row.get(c)
            if isinstance(text, (list, tuple)):
                text = ", ".join(map(str, text))
            cell = link(links[c](row), text) if c in links else esc(text)
            cells.append(f'<td{" class=n" if c in numeric else ""}>{cell}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def cards(items: list[tuple[str, object]]) -> str:
    return '<div class="cards">' + "".join(
        f'<div class="card">{esc(label)}<b>{esc(value)}</b></div>' for label, value in items) + "</div>"


def size(n) -> str:
    """Bytes for people: 1.5 KiB, 12.0 MiB (binary units, like Redpanda Console)."""
    n = float(n or 0)
    for unit in UNITS:
        if abs(n) < 1024 or unit == UNITS[-1]:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def rate(per_second, unit: str = "B") -> str:
    """A rate for people: '1.2 MiB/s' for bytes, '35.0 msg/s' otherwise; '-' when unknown."""
    if per_second is None:
        return "-"
    return size(per_second) + "/s" if unit == "B" else f"{per_second:,.1f} {unit}/s"


LINE_COLOURS = ("#f90", "#36c", "#393", "#c3c", "#c33", "#0aa", "#963", "#666")


def chart(points: list[tuple[float, float]], label: str, fmt=str, width: int = 420, height: int = 120) -> str:
    """An inline SVG line chart of (epoch seconds, value), oldest first, with the highest value and
    the time span written on its axes; no script, no external library."""
    return chart_lines([("", points)], label, fmt, width, height)


def chart_lines(lines: list[tuple[str, list[tuple[float, float]]]], label: str, fmt=str, width: int = 420,
                height: int = 120) -> str:
    """`chart` of several named series on shared axes (one per shard), each in its colour with its
    name and latest value in the caption; series with fewer than two samples are left out."""
    lines = [(name, points) for name, points in lines if len(points) >= 2]
    if not lines:
        return f'<figure><figcaption>{esc(label)}</figcaption><p class="note">(collecting samples)</p></figure>'
    t0 = min(points[0][0] for _, points in lines)
    t1 = max(points[-1][0] for _, points in lines)
    top = max(v for _, points in lines for _, v in points) or 1.0
    left, bottom = 48, height - 16
    span = (t1 - t0) or 1.0
    ago = f"{t1 - t0:.0f} s ago" if t1 - t0 < 120 else f"{(t1 - t0) / 60:.0f} min ago"
    polylines, legend = [], []
    for i, (name, points) in enumerate(lines):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        xy = " ".join(f"{left + (t - t0) / span * (width - left - 4):.1f},{bottom - v / top * (bottom - 4):.1f}"
                      for t, v in points)
        polylines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{xy}"/>')
        now = f"now {fmt(points[-1][1])}"
        legend.append(f'<span style="color:{colour}">{esc(name)}</span> {esc(now)}' if name else esc(now))
    return (f'<figure><figcaption>{esc(label)} <small>({" · ".join(legend)})</small></figcaption>'
            f'<svg class="chart" width="{width}" height="{height}" role="img" aria-label="{esc(label)}">'
            f'<line class="axis" x1="{left}" y1="{bottom}" x2="{width}" y2="{bottom}"/>'
            f'<line class="axis" x1="{left}" y1="0" x2="{left}" y2="{bottom}"/>'
            f'<text x="0" y="10">{esc(fmt(top))}</text><text x="0" y="{bottom}">0</text>'
            f'<text x="{left}" y="{height - 2}">{ago}</text>'
            f'<text x="{width - 30}" y="{height - 2}">now</text>'
            f'{"".join(polylines)}</svg></figure>')


def _inputs(fields: list[tuple]) -> str:
    """Fields are (name, label, value) or (name, label, value, input type), e.g. "password" (never echoed)."""
    return "".join(f'<label>{esc(f[1])} <input name="{esc(f[0])}"{_typed(f)}></label>' for f in fields)


def _typed(field: tuple) -> str:
    if len(field) > 3 and field[3] == "password":
        return ' type="password" value="" autocomplete="new-password"'
    return (f' type="{esc(field[3])}"' if len(field) > 3 else "") + f' value="{esc(field[2])}"'



def post_form(action: str, fields: list[tuple[str, str, object]], button: str, csrf: str) -> str:
    """A change (admins only): POST with the CSRF token (gateway.ops.actions)."""
    return (f'<form method="post" action="{esc(action)}"><input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'{_inputs(fields)}<button type="submit">{esc(button)}</button></form>')


def form(action: str, fields: list[tuple[str, str, object]], button: str) -> str:
    """A GET form (reads only: nothing to forge); fields are (name, label, current value)."""
    return (f'<form method="get" action="{esc(action)}">{_inputs(fields)}'
            f'<button type="submit">{esc(button)}</button></form>')
