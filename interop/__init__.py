"""Kafka ⇄ RocketMQ translation, sans I/O; imports `codec/` only (gateway and semantics import it).

- `interop.headers`: record headers ⇄ message properties, the routing header names, tag codes.
- `interop.inner_batch`: a Kafka RecordBatch as the one inner-batch CommitLog entry produce stores
  (tags codes, keys, routing properties) and what is read back from such an entry.
- `interop.to_kafka`: a native RocketMQ message as a magic-2 batch; a view's cut of an inner batch.
- `interop.to_rocketmq`: an inner batch as the logical RocketMQ messages a remoting pull returns.
"""
