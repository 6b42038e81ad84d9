"""`make compat-report`: third-party clients' own suites against real Kafka/RocketMQ and the gateway."""
