"""What every console page shares: the App and its history, the signed-in admin, integer query
parameters checked (BadInput: a 400 page, never an exception), paging, and the POST path of changes
(admins only, CSRF token and origin checked by gateway.ops.actions)."""
from __future__ import annotations

import datetime
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse

import gateway.ops.actions as actions
import gateway.ops.shard_view as shard_view
from gateway.ops.shard_metrics import ask_each
from gateway.ops.history import History
from gateway.ops.html import esc, link, page

PAGE_ROWS = 500  # rows of a long listing (topics, groups) per page


class BadInput(Exception):
    """A query parameter or form field that cannot be used; shown as a 400 page."""


def when(ms) -> str:
    if not ms:
        return ""
    try:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)


class Console:
    """What every page needs: the App, the history ring, the signed-in admin, page rendering."""

    def __init__(self, app, history: History) -> None:
        self.app = app
        self.history = history
        self.ring = history.ring

    def admin(self, request) -> str | None:
        return actions.admin_user(self.app, request)

    async def shards(self, *parts: str, series: tuple[str, ...] = ()) -> shard_view.Shards:
        """Every shard's totals, `parts` (shard_view.KNOWN) and history `series` (one process: its own)."""
        return await shard_view.gather(self.app, self.history, parts, series)

    def shard_url(self, request, shard: int) -> str:
        """Where shard `shard`'s own console is, as this request reached shard 0 ("" for this one): a
        queue's messages are browsed on the shard that stores them."""
        peers = self.app.config.shard_metrics
        if shard == 0 or shard > len(peers):
            return ""
        port = peers[shard - 1].rsplit(":", 1)[1]
        host = request.url.hostname or "127.0.0.1"
        return f"{request.url.scheme}://{'[' + host + ']' if ':' in host else host}:{port}"

    async def each_shard(self, own, path: str) -> list[tuple[int, object]]:
        """(shard, answer) of this shard (`own`) and, on shard 0 of --shards, of each other shard's
        JSON GET `path` that answered (shard_metrics.ask_each: a shard that did not is left out)."""
        peers = tuple(self.app.config.shard_metrics)
        answers = await ask_each(peers, path, lambda answer: answer.json()) if peers else []
        return [(0, own), *((i, a) for i, a in enumerate(answers, start=1) if a is not None)]

    def elsewhere(self, request, shards: set[int], path: str, how: str) -> str:
        """Where other shards hold some of a page's rows: links to their own consoles, where an admin
        can act on them (a change acts on the store of the shard it is made on)."""
        others = sorted(s for s in shards if s != 0)
        if not others:
            return ""
        links = ", ".join(link(self.shard_url(request, s) + path, f"shard {s}") for s in others)
        return f'<p class="note">On {links}\'s own console: {esc(how)}.</p>'

    def can_sign_in(self) -> bool:
        """The Sign in link is shown only where someone can be an admin (`--authorizer acl`)."""
        return self.app.security is not None

    def html(self, title: str, here: str, body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(page(title, here, body), status_code=status)

    def not_found(self, here: str, what: str) -> HTMLResponse:
        return self.html("Not found", here, f"<p>{esc(what)}</p>", 404)

    @staticmethod
    def int_param(request, name: str, default: int, low: int = 0, high: int = (1 << 63) - 1) -> int:
        """An integer query parameter within [low, high]; BadInput otherwise."""
        raw = request.query_params.get(name, "")
        if raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise BadInput(f"{name} must be an integer, not {raw!r}") from None
        if not low <= value <= high:
            raise BadInput(f"{name} must be between {low} and {high}")
        return value

    def paged(self, request, rows: list[dict], path: str) -> tuple[list[dict], str]:
        """One page of `rows` (`?page=N`, from 0) and the links to its neighbours."""
        last = max(0, (len(rows) - 1) // PAGE_ROWS)
        number = min(self.int_param(request, "page", 0), last)
        nav = [f"{len(rows)} rows"]
        if number > 0:
            nav.append(link(f"{path}?page={number - 1}", "previous"))
        if number < last:
            nav.append(link(f"{path}?page={number + 1}", "next"))
        if last:
            nav.insert(1, f"page {number + 1} of {last + 1}")
        return rows[number * PAGE_ROWS:(number + 1) * PAGE_ROWS], f'<p class="note">{" · ".join(nav)}</p>'

    def admin_note(self, request, how: str) -> str:
        """Where a change needs an admin: who is signed in, else how to sign in (or do it from a shell)."""
        if self.can_sign_in():
            return f'<p class="note">{link("/login", "Sign in")} as an admin to {esc(how)}.</p>'
        return ""

    async def change(self, request, title: str, here: str, do):
        """A POST: refused (403) unless an admin signed in; `await do(form)` says what it did."""
        user = self.admin(request)
        if user is None:
            sign_in = f" {link('/login', 'Sign in')}." if self.can_sign_in() else \
                " This gateway runs without --authorizer acl: it has no admins."
            return self.html("Not allowed", here, f"<p>Changes need an admin.{sign_in}</p>", 403)
        try:
            fields = {k: v[0] for k, v in parse_qs((await request.body()).decode(), keep_blank_values=True,
                                                   max_num_fields=100).items()}
            actions.check_post(request, user, fields)
            done = await do(fields)
        except (actions.Refused, BadInput, UnicodeDecodeError, ValueError) as exc:
            return self.html(title, here, f'<p class="refused">{esc(exc)}</p>', 400)
        return self.html(title, here, f'<p class="done">{esc(done)}</p><p>{link(request.url.path, "back")}</p>')


def guarded(console: Console, handler):
    """The handler, with BadInput answered by a 400 page (a query parameter it could not use)."""
    async def run(request):
        try:
            return await handler(request)
        except BadInput as exc:
            return console.html("Bad request", request.url.path, f'<p class="refused">{esc(exc)}</p>', 400)
    return run
