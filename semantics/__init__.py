"""RocketMQ meaning over the store: tags, views, delay, transactions, retry/DLQ, offsets, groups.

The gateway builds and wires these (gateway/app.py: build_app); each timer-driven part takes its
time from a `semantics.clock` object and runs as a trio service `run(*, task_status)`."""
