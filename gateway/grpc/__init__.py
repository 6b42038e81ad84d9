"""RocketMQ 5's gRPC protocol (apache.rocketmq.v2.MessagingService) on `--grpc-port`: the stock
rocketmq-clients SDKs over the one store (docs/internals.md, "gRPC")."""
