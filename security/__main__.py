"""`python -m security --data-dir DIR ...`: manage users, RocketMQ access keys and ACLs in a data dir.

A running gateway re-reads the files within a second. Examples:
  python -m security --data-dir ./data user set alice --password s3cret
  python -m security --data-dir ./data access-key set AK --secret SK --user alice
  python -m security --data-dir ./data acl add --principal User:alice --topic orders --operation WRITE
  python -m security --data-dir ./data rocketmq grant alice topic orders 'PUB|SUB'
  python -m security --data-dir ./data list
"""
from __future__ import annotations

import json
import os
import sys

from security import rocketmq_perms
from security.acl import AclError, Authorizer
from security.commands import change, parser
from security.credentials import CredentialError, CredentialStore
from store.lock import DataDirLock, DataDirLocked, acquire


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
    ns = parser().parse_args(argv)
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
    for line in change(ns, creds, acls):
        print(line)
    return 0


def main() -> int:
    try:
        return run()
    except (AclError, CredentialError, DataDirLocked, OSError) as exc:
        sys.stderr.write(f"security: error: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
