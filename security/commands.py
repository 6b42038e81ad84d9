"""The changes `python -m security` makes, as argv lists, so the console's Security page (an admin,
live on the gateway's own stores) makes them with the same parser, checks and confirmations."""
from __future__ import annotations

import argparse

from security import rocketmq_perms
from security.acl import CLUSTER_NAME, AclBinding, AclFilter, Authorizer, Operation, PatternType, Permission, ResourceType
from security.credentials import SCRAM_MECHANISMS, CredentialStore

DESCRIPTION = "manage users, RocketMQ access keys and ACLs in a data dir"


class CommandError(ValueError):
    """A command line the parser refuses (the console answers it as a refusal, never exits)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise CommandError(message)


def apply(argv: list[str], creds: CredentialStore, acls: Authorizer) -> list[str]:
    """One change, given as `python -m security`'s arguments after `--data-dir`: the confirmations."""
    ns = parser(_Parser).parse_args(argv)
    if ns.what == "list":
        raise CommandError("list is not a change")
    return change(ns, creds, acls)


def parser(cls=argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = cls(prog="python -m security", description=DESCRIPTION)
    p.add_argument("--data-dir", default="./data")
    sub = p.add_subparsers(dest="what", required=True)

    user = sub.add_parser("user").add_subparsers(dest="action", required=True)
    u = user.add_parser("set", help="create or change a user's SCRAM credentials (and so PLAIN)")
    u.add_argument("name")
    u.add_argument("--password", required=True)
    u.add_argument("--mechanism", action="append", choices=SCRAM_MECHANISMS)
    u.add_argument("--iterations", type=int, default=4096)
    u = user.add_parser("delete")
    u.add_argument("name")
    u.add_argument("--mechanism", action="append", choices=SCRAM_MECHANISMS)

    key = sub.add_parser("access-key").add_subparsers(dest="action", required=True)
    k = key.add_parser("set", help="create or change a RocketMQ access key")
    k.add_argument("key")
    k.add_argument("--secret", required=True)
    k.add_argument("--user", help="the principal's user name (default: the key)")
    k = key.add_parser("delete")
    k.add_argument("key")

    acl = sub.add_parser("acl").add_subparsers(dest="action", required=True)
    for name in ("add", "remove"):
        a = acl.add_parser(name)
        a.add_argument("--principal", required=True, help="User:name or User:*")
        target = a.add_mutually_exclusive_group(required=True)
        target.add_argument("--topic")
        target.add_argument("--group")
        target.add_argument("--transactional-id")
        target.add_argument("--cluster", action="store_true")
        a.add_argument("--prefixed", action="store_true")
        a.add_argument("--operation", required=True, choices=[o.name for o in Operation][2:])
        a.add_argument("--deny", action="store_true")
        a.add_argument("--host", default="*")

    mq = sub.add_parser("rocketmq").add_subparsers(dest="action", required=True)
    g = mq.add_parser("grant", help="RocketMQ permission PUB, SUB, PUB|SUB or DENY on a topic or group ('*': default)")
    g.add_argument("user")
    g.add_argument("kind", choices=["topic", "group"])
    g.add_argument("name")
    g.add_argument("perm")
    g = mq.add_parser("admin", help="allow RocketMQ admin operations (ALLOW ALL on the cluster)")
    g.add_argument("user")
    g.add_argument("--off", action="store_true")
    g = mq.add_parser("whitelist", help="replace the global IP whitelist")
    g.add_argument("patterns", nargs="*")

    sub.add_parser("list")
    return p


def _binding(ns) -> AclBinding:
    if ns.cluster:
        rtype, name = ResourceType.CLUSTER, CLUSTER_NAME
    elif ns.topic is not None:
        rtype, name = ResourceType.TOPIC, ns.topic
    elif ns.group is not None:
        rtype, name = ResourceType.GROUP, ns.group
    else:
        rtype, name = ResourceType.TRANSACTIONAL_ID, ns.transactional_id
    return AclBinding(rtype, name, PatternType.PREFIXED if ns.prefixed else PatternType.LITERAL, ns.principal,
                      ns.host, Operation[ns.operation], Permission.DENY if ns.deny else Permission.ALLOW)


def _describe(b: AclBinding) -> str:
    pattern = "prefixed" if b.pattern_type is PatternType.PREFIXED else "literal"
    return (f"{b.permission.name} {b.principal} {b.operation.name} on {b.resource_type.name} {b.name!r} "
            f"({pattern}) from host {b.host}")


def change(ns, creds: CredentialStore, acls: Authorizer) -> list[str]:
    """Apply one command; the lines saying what changed (or that nothing did)."""
    if ns.what == "user" and ns.action == "set":
        mechanisms = ns.mechanism or SCRAM_MECHANISMS
        creds.set_password(ns.name, ns.password, mechanisms, ns.iterations)
        return [f"user {ns.name}: {m} credentials set ({ns.iterations} iterations)" for m in mechanisms]
    if ns.what == "user":
        return [f"user {ns.name}: {m} credentials deleted" if creds.delete_scram(ns.name, m)
                else f"user {ns.name}: had no {m} credentials (nothing deleted)"
                for m in ns.mechanism or SCRAM_MECHANISMS]
    if ns.what == "access-key" and ns.action == "set":
        creds.set_access_key(ns.key, ns.secret, ns.user)
        return [f"access key {ns.key}: set, for user {ns.user or ns.key}"]
    if ns.what == "access-key":
        deleted = creds.delete_access_key(ns.key)
        return [f"access key {ns.key}: " + ("deleted" if deleted else "not found (nothing deleted)")]
    if ns.what == "acl" and ns.action == "add":
        binding = _binding(ns)
        error = acls.create([binding])[0]
        if error is not None:
            raise error
        return [f"ACL added: {_describe(binding)}"]
    if ns.what == "acl":
        b = _binding(ns)
        removed = acls.delete([AclFilter(b.resource_type, b.name, b.pattern_type, b.principal, b.host, b.operation,
                                         b.permission)])[0]
        return [f"ACL removed: {_describe(r)}" for r in removed] or [f"no ACL {_describe(b)} (nothing removed)"]
    if ns.what == "rocketmq" and ns.action == "grant":
        rocketmq_perms.grant(acls, ns.user, ns.kind, ns.name, ns.perm)
        return [f"RocketMQ: user {ns.user} now has {ns.perm.upper()} on {ns.kind} {ns.name!r}"]
    if ns.what == "rocketmq" and ns.action == "admin":
        rocketmq_perms.set_admin(acls, ns.user, not ns.off)
        return [f"RocketMQ: user {ns.user} " + ("may no longer run" if ns.off else "may now run") + " admin operations"]
    rocketmq_perms.set_whitelist(acls, ns.patterns)
    return [f"RocketMQ: global IP whitelist set to {', '.join(ns.patterns) or '(empty: no address whitelisted)'}"]
