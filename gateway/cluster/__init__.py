"""Gateway-side glue of a cluster member (docs/cluster.md): ownership of queues, joining, routes."""
