"""One authorization model for both protocols: Kafka's ACLs (what CreateAcls/DescribeAcls/DeleteAcls
carry), with Kafka's semantics, persisted atomically as `<data>/config/acls.json`.

An ACL binding = resource pattern (type, name, LITERAL or PREFIXED) + entry (principal
"User:name" or "User:*", host IP or "*", operation, ALLOW/DENY). `authorize` decides as Kafka's
AclAuthorizer/StandardAuthorizer do:
- a super user is allowed everything;
- the ACLs that apply are those whose pattern matches the resource (LITERAL equal name, LITERAL "*",
  PREFIXED name prefix) and whose principal (or "User:*") and host (or "*") match;
- any applying DENY for the operation (or ALL) denies: DENY wins;
- otherwise an applying ALLOW for the operation or ALL allows; DESCRIBE is also allowed by READ,
  WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS (Kafka's implied operations);
- when no ACL at all (of any principal or host) matches the resource, the answer is
  `allow_everyone_if_no_acl_found` (Kafka's `allow.everyone.if.no.acl.found`, default false: a
  resource nobody wrote an ACL for is denied to everyone but super users; true: open until the
  first ACL names it).
RocketMQ permissions are translated onto these bindings by `security.rocketmq_perms`.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import os

from store.config import atomic_write, read_json

FILE = "acls.json"
CLUSTER_NAME = "kafka-cluster"  # Kafka's one CLUSTER resource name
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Operations whose ALLOW also allows the key (Kafka's AclAuthorizer / StandardAuthorizer).
IMPLIED_BY = {
    Operation.DESCRIBE: {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER},
    Operation.DESCRIBE_CONFIGS: {Operation.ALTER_CONFIGS},
}


class AclError(ValueError):
    """A binding CreateAcls must refuse (Kafka answers INVALID_REQUEST with this message)."""


@dataclasses.dataclass(frozen=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, WILDCARD)

    def to_json(self) -> dict:
        return {"resourceType": self.resource_type.name, "name": self.name, "patternType": self.pattern_type.name,
                "principal": self.principal, "host": self.host, "operation": self.operation.name,
                "permission": self.permission.name}

    @classmethod
    def from_json(cls, d: dict) -> "AclBinding":
        return cls(ResourceType[d["resourceType"]], d["name"], PatternType[d["patternType"]], d["principal"],
                   d["host"], Operation[d["operation"]], Permission[d["permission"]])


def validate(b: AclBinding) -> None:
    """Raise AclError for what Kafka refuses to create."""
    if b.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise AclError(f"invalid resource type {b.resource_type.name}")
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError(f"invalid pattern type {b.pattern_type.name}: only LITERAL and PREFIXED ACLs can be created")
    if not b.name:
        raise AclError("resource name must not be empty")
    if b.pattern_type == PatternType.PREFIXED and b.name == WILDCARD:
        raise AclError("a PREFIXED pattern must not be '*' (use LITERAL '*')")
    if b.resource_type == ResourceType.CLUSTER and b.name != CLUSTER_NAME:
        raise AclError(f"the cluster resource is named {CLUSTER_NAME!r}")
    if b.operation in (Operation.UNKNOWN, Operation.ANY):
        raise AclError(f"invalid operation {b.operation.name}")
    if b.permission not in (Permission.ALLOW, Permission.DENY):
        raise AclError(f"invalid permission type {b.permission.name}")
    kind, sep, who = b.principal.partition(":")
    if not sep or not kind or not who:
        raise AclError(f"invalid principal {b.principal!r} (expected Type:name, e.g. User:alice)")
    if not b.host:
        raise AclError("host must not be empty (use '*' for any host)")


@dataclasses.dataclass(frozen=True)
class AclFilter:
    """DescribeAcls/DeleteAcls filter: ANY / None match everything; pattern MATCH matches every
    LITERAL and PREFIXED pattern that would apply to the named resource."""
    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if not self._pattern_matches(b):
            return False
        return ((self.principal is None or self.principal == b.principal)
                and (self.host is None or self.host == b.host)
                and (self.operation == Operation.ANY or self.operation == b.operation)
                and (self.permission == Permission.ANY or self.permission == b.permission))

    def _pattern_matches(self, b: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.name == self.name or b.name == WILDCARD
            return self.name.startswith(b.name)
        if self.pattern_type not in (PatternType.ANY, b.pattern_type):
            return False
        return self.name is None or self.name == b.name

    @property
    def invalid(self) -> bool:
        """A filter with an UNKNOWN field matches nothing (Kafka answers INVALID_REQUEST)."""
        return ResourceType.UNKNOWN in (self.resource_type,) or self.pattern_type == PatternType.UNKNOWN \
            or self.operation == Operation.UNKNOWN or self.permission == Permission.UNKNOWN


@dataclasses.dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # "super user", "allowed by ACL", "denied by ACL", "no ACL allows", "no ACL found"


class Authorizer:
    """The ACL table and the decisions; every change is persisted before it returns."""

    def __init__(self, config_dir: str, super_users=(), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.path = os.path.join(config_dir, FILE)
        os.makedirs(config_dir, exist_ok=True)
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: list[AclBinding] = []
        self._index: dict = {}  # resource type -> (LITERAL name -> bindings, PREFIXED bindings)
        self.extra: dict = {}  # other documents kept in the same file (RocketMQ IP whitelist)
        self._load()

    def _load(self) -> None:
        """(Re)read the file: what another process (the `python -m security` tool) wrote wins."""
        self._acls, self.extra, self._index = [], {}, {}
        try:
            doc = read_json(self.path)
        except ValueError as exc:
            raise AclError(f"{self.path} is not valid JSON: {exc}") from None
        if doc is None:
            return
        try:
            self._acls = [AclBinding.from_json(d) for d in doc.get("acls") or []]
            self.extra = {k: v for k, v in doc.items() if k not in ("acls", "version")}
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise AclError(f"{self.path} is not a valid ACL file: {exc!r}") from None
        self._reindex()

    def _reindex(self) -> None:
        """Decisions look bindings up by resource type and name instead of scanning them all."""
        index: dict = {}
        for b in self._acls:
            literal, prefixed = index.setdefault(b.resource_type, ({}, []))
            if b.pattern_type == PatternType.LITERAL:
                literal.setdefault(b.name, []).append(b)
            else:
                prefixed.append(b)
        self._index = index

    def _on_resource(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        literal, prefixed = self._index.get(resource_type, ({}, []))
        return [*literal.get(name, ()), *(literal.get(WILDCARD, ()) if name != WILDCARD else ()),
                *(b for b in prefixed if name.startswith(b.name))]

    def persist(self) -> None:
        self._reindex()
        doc = {"version": 1, "acls": [b.to_json() for b in self._acls], **self.extra}
        atomic_write(self.path, json.dumps(doc, indent=1).encode())

    # ------------------------------------------------------------ CreateAcls / DescribeAcls / DeleteAcls
    def create(self, bindings) -> list[AclError | None]:
        """Add each valid binding (an existing one is kept once); per binding None or its error."""
        results: list[AclError | None] = []
        for b in bindings:
            try:
                validate(b)
            except AclError as exc:
                results.append(exc)
                continue
            if b not in self._acls:
                self._acls.append(b)
            results.append(None)
        self.persist()
        return results

    def describe(self, flt: AclFilter) -> list[AclBinding]:
        return [] if flt.invalid else [b for b in self._acls if flt.matches(b)]

    def delete(self, filters) -> list[list[AclBinding]]:
        """Per filter, the bindings it removed (a binding matched by two filters is reported by both)."""
        matched = [self.describe(f) for f in filters]
        gone = {b for group in matched for b in group}
        if gone:
            self._acls = [b for b in self._acls if b not in gone]
            self.persist()
        return matched

    def bindings(self) -> list[AclBinding]:
        return list(self._acls)

    # ------------------------------------------------------------ decisions
    def decide(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
               name: str) -> Decision:
        if principal in self.super_users:
            return Decision(True, "super user")
        on_resource = self._on_resource(resource_type, name)
        if not on_resource:
            return Decision(self.allow_everyone_if_no_acl_found, "no ACL found")
        applying = [b for b in on_resource if b.applies_to(principal, host)]
        if any(b.permission == Permission.DENY and b.operation in (operation, Operation.ALL) for b in applying):
            return Decision(False, "denied by ACL")
        allowing = {operation, Operation.ALL} | IMPLIED_BY.get(operation, set())
        if any(b.permission == Permission.ALLOW and b.operation in allowing for b in applying):
            return Decision(True, "allowed by ACL")
        return Decision(False, "no ACL allows")

    def authorize(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
                  name: str) -> bool:
        return self.decide(principal, host, operation, resource_type, name).allowed

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str,
                              candidates) -> list[Operation]:
        """The operations of `candidates` allowed on the resource (Kafka's *_authorized_operations)."""
        return [op for op in candidates if self.authorize(principal, host, op, resource_type, name)]

    def authorize_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Is `operation` allowed on some resource of this type (Kafka's authorizeByResourceType, used for
        IDEMPOTENT_WRITE by WRITE on any topic)? An ALLOW counts unless a DENY pattern covers it."""
        if principal in self.super_users:
            return True
        allowing = {operation, Operation.ALL} | IMPLIED_BY.get(operation, set())
        applying = [b for b in self._acls if b.resource_type == resource_type and b.applies_to(principal, host)]
        denies = [b for b in applying if b.permission == Permission.DENY and b.operation in (operation, Operation.ALL)]
        allows = [b for b in applying if b.permission == Permission.ALLOW and b.operation in allowing]

        def covered(a: AclBinding) -> bool:
            for d in denies:
                if d.pattern_type == PatternType.LITERAL and d.name == WILDCARD:
                    return True
                if d.pattern_type == PatternType.PREFIXED and a.name.startswith(d.name):
                    return True
                if d.pattern_type == PatternType.LITERAL and a.pattern_type == PatternType.LITERAL and d.name == a.name:
                    return True
            return False
        if any(not covered(a) for a in allows):
            return True
        if not allows and self.allow_everyone_if_no_acl_found:
            return not any(b.resource_type == resource_type for b in self._acls)
        return False
