"""ACLs and SCRAM users through the Kafka admin API (so `kafka-acls` and `kafka-configs --entity-type
users` work): CreateAcls (30), DescribeAcls (29), DeleteAcls (31) on `security.acl.Authorizer`;
DescribeUserScramCredentials (50), AlterUserScramCredentials (51) on `security.credentials`.

As Kafka: changing ACLs needs ALTER on the cluster, reading them DESCRIBE; users likewise; without
`--authorizer acl` the ACL APIs answer SECURITY_DISABLED, while the SCRAM users are kept and described
as Kafka 4.3 keeps them without an authorizer (nothing to authorize: `kafka-configs --alter
--add-config SCRAM-SHA-256=...` succeeds), in the data dir's user store, the one a start with
`--authorizer acl` then uses.
"""
from __future__ import annotations

import os

import gateway.kafka.authz as authz
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from security.acl import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from security.credentials import SCRAM_MECHANISMS, CredentialError, CredentialStore, credential_from_salted_password

INVALID_REQUEST = 42
RESOURCE_NOT_FOUND = 91
UNSUPPORTED_SASL_MECHANISM = 33
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93
DISABLED = "the gateway runs without --authorizer acl"
# Kafka's ScramMechanism type codes on the wire.
MECHANISM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
CODE_OF = {name: code for code, name in MECHANISM_CODES.items()}


def _enum(cls, value: int):
    try:
        return cls(value)
    except ValueError:
        return cls.UNKNOWN


def _filter(d: dict) -> AclFilter:
    return AclFilter(_enum(ResourceType, d["resource_type_filter"]), d["resource_name_filter"],
                     _enum(PatternType, d.get("pattern_type_filter", 3)), d["principal_filter"], d["host_filter"],
                     _enum(Operation, d["operation"]), _enum(Permission, d["permission_type"]))


def _entry(b: AclBinding) -> dict:
    return {"principal": b.principal, "host": b.host, "operation": int(b.operation),
            "permission_type": int(b.permission)}


def _refused(ctx, operation: Operation):
    """None, or (error code, message) when the request must be refused as a whole."""
    if ctx.app.security is None:
        return authz.SECURITY_DISABLED, DISABLED
    ctx.app.security.refresh()  # what `python -m security` wrote meanwhile is not overwritten
    if authz.cluster_error(ctx, operation):
        return authz.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return None


@handler(apis.CREATE_ACLS)
async def create_acls(ctx: RequestContext):
    creations = ctx.request["creations"]
    refused = _refused(ctx, Operation.ALTER)
    if refused:
        return {"results": [{"error_code": refused[0], "error_message": refused[1]} for _ in creations]}
    bindings = [AclBinding(_enum(ResourceType, c["resource_type"]), c["resource_name"],
                           _enum(PatternType, c.get("resource_pattern_type", 3)), c["principal"], c["host"],
                           _enum(Operation, c["operation"]), _enum(Permission, c["permission_type"]))
                for c in creations]
    results = ctx.app.security.authorizer.create(bindings)
    return {"results": [{"error_code": INVALID_REQUEST if err else 0, "error_message": str(err) if err else None}
                        for err in results]}


@handler(apis.DESCRIBE_ACLS)
async def describe_acls(ctx: RequestContext):
    refused = _refused(ctx, Operation.DESCRIBE)
    if refused:
        return {"error_code": refused[0], "error_message": refused[1], "resources": []}
    flt = _filter(ctx.request)
    if flt.invalid:
        return {"error_code": INVALID_REQUEST, "error_message": "the filter has an UNKNOWN field", "resources": []}
    resources: dict = {}
    for b in ctx.app.security.authorizer.describe(flt):
        resources.setdefault((b.resource_type, b.name, b.pattern_type), []).append(_entry(b))
    return {"error_code": 0, "error_message": None, "resources": [
        {"resource_type": int(t), "resource_name": n, "pattern_type": int(p), "acls": acls}
        for (t, n, p), acls in resources.items()]}


@handler(apis.DELETE_ACLS)
async def delete_acls(ctx: RequestContext):
    filters = ctx.request["filters"]
    refused = _refused(ctx, Operation.ALTER)
    if refused:
        return {"filter_results": [{"error_code": refused[0], "error_message": refused[1], "matching_acls": []}
                                   for _ in filters]}
    parsed = [_filter(f) for f in filters]
    removed = ctx.app.security.authorizer.delete([f for f in parsed if not f.invalid])
    results, it = [], iter(removed)
    for f in parsed:
        if f.invalid:
            results.append({"error_code": INVALID_REQUEST, "error_message": "the filter has an UNKNOWN field",
                            "matching_acls": []})
            continue
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": int(b.resource_type), "resource_name": b.name,
             "pattern_type": int(b.pattern_type), **_entry(b)} for b in next(it)]})
    return {"filter_results": results}


def _user_store(app) -> CredentialStore:
    """The SCRAM users: the authorizer's store, or without --authorizer acl the data dir's own (read
    afresh, so what `python -m security` wrote meanwhile is seen)."""
    if app.security is not None:
        return app.security.credentials
    if app.authentication is not None:  # SASL listeners without an authorizer: their store, re-read now
        app.authentication.reread()
        return app.authentication.credentials
    return CredentialStore(os.path.join(app.store.path, "config"))


def _users_refused(ctx, operation: Operation):
    """None, or (error code, message) when the principal may not read (DESCRIBE) or change (ALTER)
    users; without an authorizer nothing is refused, as on Kafka."""
    if ctx.app.security is None:
        return None
    return _refused(ctx, operation)


def _credential_infos(store, name: str) -> list[dict]:
    return [{"mechanism": CODE_OF[m], "iterations": i} for m, i in store.describe(name) if m in CODE_OF]


@handler(apis.DESCRIBE_USER_SCRAM_CREDENTIALS)
async def describe_user_scram_credentials(ctx: RequestContext):
    """As Kafka 4.3 (with or without an authorizer): a user named twice is refused alone."""
    refused = _users_refused(ctx, Operation.DESCRIBE)
    if refused:
        return {"error_code": refused[0], "error_message": refused[1], "results": []}
    store = _user_store(ctx.app)
    users = ctx.request["users"]
    names = [u["name"] for u in users] if users else store.users()
    results = []
    for name in dict.fromkeys(names):
        infos = _credential_infos(store, name)
        if names.count(name) > 1:
            code, message, infos = DUPLICATE_RESOURCE, (
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"), []
        elif infos:
            code, message = 0, ""
        else:
            code, message = RESOURCE_NOT_FOUND, f"Attempt to describe a user credential that does not exist: {name}"
        results.append({"user": name, "error_code": code, "error_message": message, "credential_infos": infos})
    return {"error_code": 0, "error_message": "", "results": results}


@handler(apis.ALTER_USER_SCRAM_CREDENTIALS)
async def alter_user_scram_credentials(ctx: RequestContext):
    req = ctx.request
    names = list(dict.fromkeys([d["name"] for d in req["deletions"]] + [u["name"] for u in req["upsertions"]]))
    refused = _users_refused(ctx, Operation.ALTER)
    if refused:
        return {"results": [{"user": n, "error_code": refused[0], "error_message": refused[1]} for n in names]}
    store = _user_store(ctx.app)
    every = [d["name"] for d in req["deletions"]] + [u["name"] for u in req["upsertions"]]
    # As Kafka: a user named twice in one request (e.g. two mechanisms) is refused, the others go on
    errors: dict[str, tuple[int, str]] = {
        n: (DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        for n in names if every.count(n) > 1}
    for d in req["deletions"]:
        if d["name"] in errors:
            continue
        mech = MECHANISM_CODES.get(d["mechanism"])
        if mech is None:
            errors.setdefault(d["name"], (UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
        elif not store.delete_scram(d["name"], mech):
            errors.setdefault(d["name"], (RESOURCE_NOT_FOUND,
                                          "Attempt to delete a user credential that does not exist"))
    for u in req["upsertions"]:
        if u["name"] in errors:
            continue
        mech = MECHANISM_CODES.get(u["mechanism"])
        if mech is None or mech not in SCRAM_MECHANISMS:
            errors.setdefault(u["name"], (UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
            continue
        try:
            cred = credential_from_salted_password(mech, bytes(u["salt"]), bytes(u["salted_password"]),
                                                   u["iterations"])
            store.set_scram(u["name"], mech, cred)
        except CredentialError as exc:
            errors.setdefault(u["name"], (UNACCEPTABLE_CREDENTIAL, str(exc)))
    return {"results": [{"user": n, "error_code": errors.get(n, (0, None))[0],
                         "error_message": errors.get(n, (0, None))[1]} for n in names]}
