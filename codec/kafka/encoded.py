"""Values the Kafka encoder writes as they are."""
from __future__ import annotations


class Encoded(bytes):
    """An array field's value already encoded for the version being written, length prefix
    included (`codec.kafka.protocol.encoded_response_array`): a part that is the same in many
    answers is encoded once, by whoever caches it."""
