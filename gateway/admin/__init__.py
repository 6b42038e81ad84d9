"""`python -m gateway.admin` (console script `rocketgate`): operate a running gateway over its own
protocols and HTTP port, never by opening the store files. Kafka AdminClient (confluent-kafka) for
topics and offset resets, the gateway's read-only JSON API (`--http-port`) for groups, lag,
messages and dead letters, and one remoting request (RESEND_DLQ_MESSAGE) for resending.
Exit codes: 0 done, 1 the gateway refused or found nothing, 2 usage, 3 gateway unreachable."""
