"""RocketMQ's remoting request signature (the stock clients' `AclClientRPCHook`), shared by `client/`,
which signs, and the gateway, which verifies with the same function.

The signed content is the values of every extFields entry except `Signature`, concatenated in the
order of their keys (Java's TreeMap: UTF-16 code-unit order), UTF-8 encoded, followed by the body.
`AccessKey` (and `SecurityToken`, when there is one) are fields like any other, so they are signed
too. The signature is base64(HMAC-SHA1(secret, content)). A broker verifying a request from a client
of version <= 4.9.3 leaves `_UNIQUE_KEY_QUERY` out of the content, as those clients did.
"""
from __future__ import annotations

import base64
import hashlib
import hmac

from codec.remoting.command import RemotingCommand, stringify

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
V4_9_3 = 399  # MQVersion.Version.V4_9_3.ordinal()


def _java_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def signing_content(ext_fields: dict[str, str], body: bytes, skip: frozenset = frozenset()) -> bytes:
    """The bytes a signature covers: sorted field values (Signature and `skip` left out), then the body."""
    text = "".join(ext_fields[k] for k in sorted(ext_fields, key=_java_order)
                   if k != SIGNATURE and k not in skip)
    return text.encode("utf-8", "surrogatepass") + bytes(body or b"")


def signature(content: bytes, secret: str) -> str:
    """base64(HMAC-SHA1(secret, content)), as AclSigner computes it."""
    digest = hmac.new(secret.encode("utf-8", "surrogatepass"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign(cmd: RemotingCommand, access_key: str, secret_key: str, security_token: str | None = None) -> None:
    """Add AccessKey, the optional SecurityToken and the Signature to `cmd`'s extFields."""
    fields = stringify(cmd.ext_fields)
    fields.pop(SIGNATURE, None)
    fields[ACCESS_KEY] = access_key
    if security_token is not None:
        fields[SECURITY_TOKEN] = security_token
    fields[SIGNATURE] = signature(signing_content(fields, cmd.body), secret_key)
    cmd.ext_fields = fields


def expected_signature(cmd: RemotingCommand, secret_key: str) -> str:
    """The signature the holder of `secret_key` would have put on this request (verifier side)."""
    skip = frozenset((UNIQUE_MSG_QUERY_FLAG,)) if cmd.version <= V4_9_3 else frozenset()
    return signature(signing_content(cmd.ext_fields, cmd.body, skip), secret_key)


def signature_matches(cmd: RemotingCommand, secret_key: str) -> bool:
    """Constant-time check of the request's Signature field against `secret_key`."""
    given = cmd.ext_fields.get(SIGNATURE)
    if given is None:
        return False
    return hmac.compare_digest(expected_signature(cmd, secret_key).encode(), given.encode("utf-8", "replace"))
