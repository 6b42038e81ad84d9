"""Dashboard changes, for an authenticated admin only: with `--authorizer acl`, HTTP Basic
credentials of a user (SCRAM-stored password) allowed ALTER on the cluster (a super user); /login
checks them once and sets a signed session cookie (HttpOnly, SameSite=Strict, SESSION_S). Without
security nobody is an admin and the pages stay read-only. Every change is a POST carrying a CSRF
token (an HMAC of the user under a per-process key) and an Origin/Referer of this host, so another
site cannot make a logged-in browser submit it. Changes: create a topic, reset a group's offsets
(no live members), resend dead letters, deliver a delayed message now, commit or roll back a pending transaction, create users and add or remove ACLs (security.commands:
the same parser and checks as `python -m security`)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from urllib.parse import urlsplit

import security.commands as security_commands
from security.acl import AclError, Operation, ResourceType
from security.credentials import CredentialError
from semantics import backtrack
from semantics.flow_control import append_in_turn
from semantics.retry import resend_from_dlq
from semantics.routing import SCHEDULE_TOPIC

import gateway.ops.inspect as inspect
from gateway.kafka.topics import legal_name
from codec.remoting.message import parse_msg_id

_KEY = secrets.token_bytes(32)  # per process: tokens and sessions end with it
SESSION_COOKIE = "rocketgate_admin"
SESSION_S = 8 * 3600


class Refused(Exception):
    """An action that cannot be done; the message is shown on the page."""


def admin_user(app, request) -> str | None:
    """The admin making this request (a valid session cookie or Basic credentials), else None."""
    sec = app.security
    if sec is None:
        return None
    sec.refresh()  # a user or ACL changed by `python -m security` counts within a second
    user = _session_user(request.cookies.get(SESSION_COOKIE, "")) or basic_user(sec, request)
    host = request.client.host if request.client else ""
    if user and sec.authorizer.authorize(f"User:{user}", host, Operation.ALTER, ResourceType.CLUSTER, "kafka-cluster"):
        return user
    return None


def basic_user(sec, request) -> str | None:
    """The user whose HTTP Basic credentials this request carries (checked against the user store)."""
    header = request.headers.get("authorization", "")
    if not header.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user if sec.credentials.verify_plain(user, password) else None


def session_cookie(user: str) -> str:
    """`user:expiry:signature`, for the SESSION_COOKIE set by /login."""
    payload = f"{user}:{int(time.time()) + SESSION_S}"
    return payload + ":" + hmac.new(_KEY, payload.encode(), hashlib.sha256).hexdigest()


def _session_user(cookie: str) -> str | None:
    payload, _, signature = cookie.rpartition(":")
    user, _, expiry = payload.rpartition(":")
    good = hmac.new(_KEY, payload.encode(), hashlib.sha256).hexdigest()
    if not user or not hmac.compare_digest(signature, good) or not expiry.isdigit() or int(expiry) < time.time():
        return None
    return user


def csrf_token(user: str) -> str:
    return hmac.new(_KEY, user.encode(), hashlib.sha256).hexdigest()


def check_post(request, user: str, form) -> None:
    """Refused unless the form carries the user's token and the request comes from this site."""
    if not hmac.compare_digest(str(form.get("csrf", "")), csrf_token(user)):
        raise Refused("the form is stale or was not sent from this dashboard (CSRF token)")
    origin = request.headers.get("origin") or request.headers.get("referer") or ""
    if urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Refused("the form was sent from another site")


def create_topic(app, name: str, queues: str) -> str:
    if not legal_name(name):
        raise Refused(f"{name[:300]!r} is not a legal topic name (letters, digits, '.', '_', '-'; at most 249)")
    if app.store.topics.get(name) is not None:
        raise Refused(f"topic {name!r} exists")
    try:
        n = int(queues)
    except ValueError:
        raise Refused("queues must be a number") from None
    if not 1 <= n <= 1024:
        raise Refused("queues must be between 1 and 1024")
    app.store.topics.create(name, read_queues=n, write_queues=n)
    return f"created topic {name} with {n} queues"


def reset_plan(app, group: str, topic: str, to: str) -> dict[int, int]:
    """{queue: offset} a reset to `to` (earliest, latest or epoch ms) would commit; Refused if it cannot."""
    live = len(app.rocketmq_clients.live_consumers(group)) + len(app.kafka.coordinator.describe(group)["members"])
    if live:
        raise Refused(f"group {group} has {live} live member(s): stop them first")
    timestamps = {"earliest": 0, "latest": -1}
    try:
        timestamp = timestamps[to] if to in timestamps else int(to)
    except ValueError:
        raise Refused("reset to earliest, latest or a time in epoch ms") from None
    try:
        plan = backtrack.reset_plan(app.store, app.offsets, group, topic, timestamp, True, False)
    except backtrack.ResetRefused as exc:
        raise Refused(str(exc)) from None
    return plan


def reset_offsets(app, group: str, topic: str, plan: dict[int, int]) -> str:
    backtrack.apply_plan(app.offsets, group, topic, plan)
    return f"reset {group} on {topic} to {plan}"


async def resend(app, group: str, msg_id: str | None) -> str:
    """One dead letter (by msgId) or all of the group's, back on their original topics."""
    every = inspect.dead_letter_page(app, group, 0, 1 << 30)["messages"]
    ids = [msg_id] if msg_id else [m["msg_id"] for m in every]
    done = 0
    for one in ids:
        try:
            offset = parse_msg_id(one)[2]
        except ValueError:
            raise Refused(f"{one!r} is not a msgId") from None
        result = resend_from_dlq(app.store, offset)
        if result is None:
            raise Refused(f"{one} is not a dead letter with a known original topic")
        await app.durable(result.end_offset)
        done += 1
    return f"resent {done} dead letter(s) of {group}"



async def deliver_now(app, msg_id: str) -> str:
    """A scheduled message delivered at once: its real copy appended as the scheduler would, then the
    scheduled entry recalled (semantics.delay), so it is dropped when its time comes."""
    try:
        phys = parse_msg_id(msg_id)[2]
    except ValueError:
        raise Refused(f"{msg_id!r} is not a msgId") from None
    entry = app.store.get(phys)
    if entry is None or entry.topic != SCHEDULE_TOPIC:
        raise Refused(f"{msg_id} is not a scheduled message")
    delay, q = app.delay, entry.queue_id
    msg = delay.real_copy(entry, q)
    uniq = msg.properties.get("UNIQ_KEY") if msg is not None else None
    if not uniq:
        raise Refused(f"{msg_id} names no real topic or UNIQ_KEY: it cannot be recalled")
    if entry.queue_offset < delay.cursor[q] or (msg.topic, uniq) in delay.recalled:
        raise Refused(f"{msg_id} was already delivered")
    units = app.store.units(SCHEDULE_TOPIC, q, entry.queue_offset, 1)
    due = units[0][2] if units else int(time.time() * 1000)
    result = (await append_in_turn(app.flow, app.store, [msg]))[0]
    delay.recall(msg.topic, uniq, due)
    await app.durable(result.end_offset)
    return f"delivered {uniq} to {msg.topic} now"


async def end_transaction(app, half_offset: str, decision: str) -> str:
    """An operator decides a pending transaction as its producer would (END_TRANSACTION): commit
    delivers the half message, roll back discards it; an already decided one is left as it is."""
    try:
        offset = int(half_offset)
    except ValueError:
        raise Refused(f"{half_offset!r} is not a half offset") from None
    if decision not in ("commit", "rollback"):
        raise Refused("decide commit or rollback")
    outcome, result = await app.transactions.end_in_turn(app.flow, offset, decision == "commit")
    if result is None:
        raise Refused(f"half message {offset}: {outcome.value}")
    await app.durable(result.end_offset)
    return f"half message {offset} {outcome.value}"


# Resource types an ACL form may name, as `python -m security acl` flags.
ACL_RESOURCES = ("topic", "group", "transactional-id", "cluster")


def security_change(app, argv: list[str]) -> str:
    """A users/ACLs change as `python -m security ARGV` would make it, on the gateway's own stores
    (so it takes effect at once): its confirmation lines."""
    sec = app.security
    if sec is None:
        raise Refused("this gateway runs without --authorizer acl")
    try:
        return "; ".join(security_commands.apply(argv, sec.credentials, sec.authorizer))
    except (security_commands.CommandError, AclError, CredentialError) as exc:
        raise Refused(str(exc)) from None


def set_access_key(app, fields: dict) -> str:
    """`access-key set` from the Security page's form. A blank secret is generated and shown in this
    answer only (the page never shows a secret again); a typed one is never echoed."""
    secret = fields.get("secret", "")
    generated = not secret
    if generated:
        secret = secrets.token_urlsafe(24)
    user = ["--user=" + fields["user"]] if fields.get("user") else []
    done = security_change(app, ["access-key", "set", "--secret=" + secret, *user, "--", fields.get("key", "")])
    return done + (f"; secret key (shown only now): {secret}" if generated else "")


def acl_argv(fields: dict) -> list[str]:
    """The `acl add|remove` arguments of the Security page's ACL form."""
    change, resource = fields.get("change", ""), fields.get("resource", "")
    if change not in ("add", "remove") or resource not in ACL_RESOURCES:
        raise Refused(f"change is add or remove; resource one of {', '.join(ACL_RESOURCES)}")
    target = ["--cluster"] if resource == "cluster" else [f"--{resource}", fields.get("name", "")]
    deny = ["--deny"] if fields.get("permission", "ALLOW").upper() == "DENY" else []
    return ["acl", change, "--principal", fields.get("principal", ""), *target,
            "--operation", fields.get("operation", "").upper(), *deny]
