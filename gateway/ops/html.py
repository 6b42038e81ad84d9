"""Server-rendered HTML for the dashboard pages without a template engine: every value goes
through `esc` (html.escape) on its way into markup, so nothing read from the store or a request
can inject markup or script. One stylesheet, no JavaScript."""
from __future__ import annotations

from html import escape
from urllib.parse import quote

NAV = [("/", "Overview"), ("/topics", "Topics"), ("/groups", "Groups"), ("/messages", "Messages"),
       ("/dlq", "DLQ"), ("/delay", "Delay queues"), ("/transactions", "Transactions"), ("/schemas", "Schemas")]

STYLE = """body{font-family:system-ui,sans-serif;margin:0;color:#222}
nav{background:#1f2d3d;padding:.6em 1em}nav a{color:#fff;margin-right:1.2em;text-decoration:none}
nav a.here{font-weight:bold;border-bottom:2px solid #f90}main{padding:1em 1.5em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#eef}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ccc;border-radius:6px;padding:.6em 1em;min-width:9em}
.card b{display:block;font-size:1.4em}pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap;word-break:break-all}
form{margin:.5em 0 1em}input{margin-right:.5em}.note{color:#666}"""


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


def sparkline(values: list[float], width: int = 320, height: int = 48) -> str:
    """An inline SVG polyline of `values` (oldest first)."""
    if len(values) < 2:
        return '<p class="note">(collecting samples)</p>'
    top = max(values) or 1.0
    step = width / (len(values) - 1)
    points = " ".join(f"{i * step:.1f},{height - v / top * (height - 2):.1f}" for i, v in enumerate(values))
    return (f'<svg width="{width}" height="{height}" role="img" aria-label="throughput">'
            f'<polyline fill="none" stroke="#f90" stroke-width="2" points="{points}"/></svg>')


def _inputs(fields: list[tuple[str, str, object]]) -> str:
    return "".join(f'<label>{esc(label)} <input name="{esc(name)}" value="{esc(value)}"></label>'
                   for name, label, value in fields)


def post_form(action: str, fields: list[tuple[str, str, object]], button: str, csrf: str) -> str:
    """A change (admins only): POST with the CSRF token (gateway.ops.actions)."""
    return (f'<form method="post" action="{esc(action)}"><input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'{_inputs(fields)}<button type="submit">{esc(button)}</button></form>')


def form(action: str, fields: list[tuple[str, str, object]], button: str) -> str:
    """A GET form (reads only: nothing to forge); fields are (name, label, current value)."""
    return (f'<form method="get" action="{esc(action)}">{_inputs(fields)}'
            f'<button type="submit">{esc(button)}</button></form>')
