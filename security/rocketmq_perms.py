"""RocketMQ's permission vocabulary (plain_acl.yml: topicPerms, groupPerms, defaultTopicPerm,
defaultGroupPerm, admin, globalWhiteRemoteAddresses) written as the Kafka ACL bindings of
`security.acl`, so a user given access to a topic once uses it from both protocols.

| RocketMQ | ACL binding(s) for User:<user> |
|---|---|
| topic T = PUB | ALLOW WRITE on TOPIC T (LITERAL) |
| topic T = SUB | ALLOW READ on TOPIC T |
| topic T = PUB\\|SUB | both |
| topic T = DENY | DENY ALL on TOPIC T (DENY wins over any default) |
| group G = SUB (or PUB\\|SUB) | ALLOW READ on GROUP G |
| group G = DENY | DENY ALL on GROUP G |
| defaultTopicPerm / defaultGroupPerm = P | the same on the LITERAL "*" resource; DENY = no binding |
| admin: true | ALLOW ALL on CLUSTER kafka-cluster |

The global IP whitelist is kept beside the ACLs (`acls.json`, key `rocketmq`): a remoting request
from a listed address skips authentication and authorization, as in RocketMQ. Patterns: `*`, an
exact address, a CIDR (`10.0.0.0/8`), or RocketMQ's IPv4 forms `192.168.1.*` and `192.168.1.10-20`.
"""
from __future__ import annotations

import ipaddress

from security.acl import (CLUSTER_NAME, WILDCARD, AclBinding, AclError, AclFilter, Authorizer, Operation,
                          PatternType, Permission, ResourceType)

PUB, SUB = 1, 2
_KINDS = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP}


def parse_perm(text: str) -> int:
    """"PUB", "SUB", "PUB|SUB" (either order) → bits; "DENY" → 0."""
    parts = {p.strip().upper() for p in text.split("|")}
    if parts == {"DENY"}:
        return 0
    if not parts or not parts <= {"PUB", "SUB"}:
        raise AclError(f"invalid RocketMQ permission {text!r} (PUB, SUB, PUB|SUB or DENY)")
    return (PUB if "PUB" in parts else 0) | (SUB if "SUB" in parts else 0)


def perm_bindings(user: str, kind: str, name: str, perm: str, host: str = WILDCARD) -> list[AclBinding]:
    """The bindings that say `perm` for User:<user> on topic/group `name` ("*" for the default)."""
    rtype = _KINDS.get(kind)
    if rtype is None:
        raise AclError(f"invalid RocketMQ resource kind {kind!r} (topic or group)")
    bits = parse_perm(perm)
    principal = f"User:{user}"

    def binding(op: Operation, permission: Permission) -> AclBinding:
        return AclBinding(rtype, name, PatternType.LITERAL, principal, host, op, permission)
    if bits == 0:
        return [] if name == WILDCARD else [binding(Operation.ALL, Permission.DENY)]
    if rtype == ResourceType.GROUP:
        if not bits & SUB:
            raise AclError("a group permission is SUB, PUB|SUB or DENY")
        return [binding(Operation.READ, Permission.ALLOW)]
    ops = ([Operation.WRITE] if bits & PUB else []) + ([Operation.READ] if bits & SUB else [])
    return [binding(op, Permission.ALLOW) for op in ops]


def grant(authorizer: Authorizer, user: str, kind: str, name: str, perm: str, host: str = WILDCARD) -> None:
    """Set User:<user>'s RocketMQ permission on one topic or group (replacing the earlier one)."""
    new = perm_bindings(user, kind, name, perm, host)  # validates before anything is removed
    revoke(authorizer, user, kind, name)
    if new:
        authorizer.create(new)


def revoke(authorizer: Authorizer, user: str, kind: str, name: str) -> None:
    rtype = _KINDS[kind]
    authorizer.delete([AclFilter(rtype, name, PatternType.LITERAL, f"User:{user}")])


def set_admin(authorizer: Authorizer, user: str, admin: bool = True) -> None:
    """RocketMQ's `admin: true`: ALLOW ALL on the cluster (topic create/delete, offset reset, DLQ resend)."""
    binding = AclBinding(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, f"User:{user}", WILDCARD,
                         Operation.ALL, Permission.ALLOW)
    if admin:
        authorizer.create([binding])
    else:
        authorizer.delete([AclFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, binding.principal,
                                     WILDCARD, Operation.ALL, Permission.ALLOW)])


def effective_perm(authorizer: Authorizer, principal: str, host: str, kind: str, name: str) -> str:
    """What RocketMQ would call the principal's permission on the resource: PUB|SUB, PUB, SUB or DENY."""
    rtype = _KINDS[kind]
    pub = rtype == ResourceType.TOPIC and authorizer.authorize(principal, host, Operation.WRITE, rtype, name)
    sub = authorizer.authorize(principal, host, Operation.READ, rtype, name)
    return {(True, True): "PUB|SUB", (True, False): "PUB", (False, True): "SUB"}.get((pub, sub), "DENY")


# ------------------------------------------------------------ global IP whitelist
def set_whitelist(authorizer: Authorizer, patterns: list[str]) -> None:
    for p in patterns:
        _check_pattern(p)
    authorizer.extra.setdefault("rocketmq", {})["globalWhiteRemoteAddresses"] = list(patterns)
    authorizer.persist()


def whitelist(authorizer: Authorizer) -> list[str]:
    return list((authorizer.extra.get("rocketmq") or {}).get("globalWhiteRemoteAddresses") or [])


def whitelisted(authorizer: Authorizer, address: str) -> bool:
    return any(address_matches(p, address) for p in whitelist(authorizer))


def _check_pattern(pattern: str) -> None:
    if pattern == WILDCARD:
        return
    if "/" in pattern:
        try:
            ipaddress.ip_network(pattern, strict=False)
        except ValueError:
            raise AclError(f"invalid address pattern {pattern!r}") from None
        return
    if "*" in pattern or "-" in pattern:
        if _octet_patterns(pattern) is None:
            raise AclError(f"invalid address pattern {pattern!r}")
        return
    try:
        ipaddress.ip_address(pattern)
    except ValueError:
        raise AclError(f"invalid address pattern {pattern!r}") from None


def _octet_patterns(pattern: str):
    """IPv4 `a.b.c.*` / `a.b.c.1-100` as four (lo, hi) ranges, or None."""
    parts = pattern.split(".")
    if len(parts) != 4:
        return None
    ranges = []
    for part in parts:
        if part == "*":
            ranges.append((0, 255))
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        lo_n, hi_n = int(lo), int(hi or lo)
        if not 0 <= lo_n <= hi_n <= 255:
            return None
        ranges.append((lo_n, hi_n))
    return ranges


def address_matches(pattern: str, address: str) -> bool:
    if pattern == WILDCARD:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if "/" in pattern:
        try:
            return ip in ipaddress.ip_network(pattern, strict=False)
        except (ValueError, TypeError):
            return False
    if "*" in pattern or "-" in pattern:
        ranges = _octet_patterns(pattern)
        if ranges is None or ip.version != 4:
            return False
        return all(lo <= int(o) <= hi for o, (lo, hi) in zip(str(ip).split("."), ranges))
    try:
        return ipaddress.ip_address(pattern) == ip
    except ValueError:
        return False
