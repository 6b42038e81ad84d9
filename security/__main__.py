"""`python -m security --data-dir DIR ...`: manage users, RocketMQ access keys and ACLs in a data dir.

A running gateway re-reads the files within a second. Examples:
  python -m security --data-dir ./data user set alice --password s3cret
  python -m security --data-dir ./data access-key set AK --secret SK --user alice
  python -m security --data-dir ./data acl add --principal User:alice --topic orders --operation WRITE
  python -m security --data-dir ./data rocketmq grant alice topic orders 'PUB|SUB'
  python -m security --data-dir ./data list
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from security.acl import (CLUSTER_NAME, AclBinding, AclError, AclFilter, Authorizer, Operation, PatternType,
                          Permission, ResourceType)
from security.credentials import SCRAM_MECHANISMS, CredentialError, CredentialStore
from security import rocketmq_perms
from store.lock import DataDirLock, DataDirLocked, acquire


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m security", description=__doc__.splitlines()[0])
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


def _lock_for_writing(data_dir: str) -> DataDirLock | None:
    """Hold the data-dir lock while writing offline, so no gateway starts mid-change; a running
    gateway holds it itself and re-reads the files we write (a live change: None). Anything else
    holding it (another offline writer, a store tool) refuses the change: DataDirLocked."""
    os.makedirs(data_dir, exist_ok=True)
    try:
        return acquire(data_dir, what="python -m security")
    except DataDirLocked as exc:
        if exc.holder_what != "gateway":
            raise
        sys.stderr.write(f"security: the {exc.holder} running on {data_dir!r} picks this change up live\n")
        return None


def run(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    if ns.what == "list":  # read-only: the files are replaced atomically, no lock needed
        return _apply(ns)
    lock = _lock_for_writing(ns.data_dir)
    try:
        return _apply(ns)
    finally:
        if lock is not None:
            lock.release()


def _apply(ns) -> int:
    """Make the change and confirm it on stdout, one line per change (`list`: the JSON listing)."""
    config_dir = os.path.join(ns.data_dir, "config")
    creds, acls = CredentialStore(config_dir), Authorizer(config_dir)
    if ns.what == "list":
        print(json.dumps({"users": {u: creds.describe(u) for u in creds.users()},
                          "access_keys": {k: creds.access_key(k).user for k in creds.access_keys()},
                          "acls": [b.to_json() for b in acls.bindings()],
                          "rocketmq_whitelist": rocketmq_perms.whitelist(acls)}, indent=1))
        return 0
    for line in _change(ns, creds, acls):
        print(line)
    return 0


def _describe(b: AclBinding) -> str:
    pattern = "prefixed" if b.pattern_type is PatternType.PREFIXED else "literal"
    return (f"{b.permission.name} {b.principal} {b.operation.name} on {b.resource_type.name} {b.name!r} "
            f"({pattern}) from host {b.host}")


def _change(ns, creds: CredentialStore, acls: Authorizer) -> list[str]:
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


def main() -> int:
    try:
        return run()
    except (AclError, CredentialError, DataDirLocked, OSError) as exc:
        sys.stderr.write(f"security: error: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
