"""The cluster's inter-broker credential (docs/security.md, "Between gateways"): the access key and
secret every gateway of a secured cluster signs its requests to the others with (CLUSTER_DELIVER,
replication fetches), and the only credential a leader accepts CLUSTER_DELIVER from.

Given with `--inter-broker-credentials FILE`, a JSON file `{"accessKey": ..., "secretKey": ...}`
(the value of Apache RocketMQ 5's `innerClientAuthenticationCredentials`), the same on every
gateway, like Kafka's inter-broker SASL user. It is not in the user store: it authenticates only
gateway-to-gateway requests (INTER_BROKER_CODES, REPLICATION_CODES), as `User:<accessKey>`.
"""
from __future__ import annotations

import dataclasses
import json

from codec.remoting import RemotingCommand, RequestCode as RC
from codec.remoting.acl import ACCESS_KEY, sign, signature_matches

INTER_BROKER_CODES = frozenset((RC.CLUSTER_DELIVER, RC.CLUSTER_TXN_MARKERS, RC.CLUSTER_END_TRANSACTION,
                                RC.CLUSTER_SHARE_OFFSETS, RC.CLUSTER_RECALL))  # accepted from the inter-broker principal only
# a follower's fetches: accepted from the inter-broker principal too (and, as before, from cluster admins)
REPLICATION_CODES = frozenset((RC.REPLICA_FETCH, RC.REPLICA_EPOCH_END))


class InterBrokerError(ValueError):
    """The credential file cannot be used (the message says why, never the secret)."""


@dataclasses.dataclass(frozen=True)
class InterBrokerCredential:
    access_key: str
    secret_key: str = dataclasses.field(repr=False)

    @property
    def principal(self) -> str:
        return f"User:{self.access_key}"

    def sign(self, cmd: RemotingCommand) -> None:
        sign(cmd, self.access_key, self.secret_key)

    def names(self, req: RemotingCommand) -> bool:
        """Whether the request claims to come from this credential (its AccessKey)."""
        return req.ext_fields.get(ACCESS_KEY) == self.access_key

    def signed(self, req: RemotingCommand) -> bool:
        """Whether the request carries this credential's valid signature over exactly its bytes."""
        return self.names(req) and signature_matches(req, self.secret_key)


def load(path: str) -> InterBrokerCredential:
    """The credential in `path`; InterBrokerError when it is missing, unreadable or incomplete."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except OSError as exc:
        raise InterBrokerError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise InterBrokerError(f"{path} is not JSON") from None
    keys = (doc.get("accessKey"), doc.get("secretKey")) if isinstance(doc, dict) else (None, None)
    if not all(isinstance(k, str) and k and "\x00" not in k for k in keys):
        raise InterBrokerError(f'{path} needs {{"accessKey": "...", "secretKey": "..."}} (non-empty strings)')
    return InterBrokerCredential(*keys)
