# Schema-registry clients other than Python's, for tests/schema_registry (each test skips without its
# toolchain): franz-go's pkg/sr (compat/srgo/go.mod, Go module proxy; the test builds the module) and
# @kafkajs/confluent-schema-registry with kafkajs (compat/srnode/package-lock.json, npm ci).
# Stamped on the lock files, so a repeated `make setup` does nothing.
SR_NODE_STAMP := compat/srnode/node_modules/.installed
SR_GO_STAMP := compat/srgo/.downloaded

.PHONY: sr-clients sr-clients-go sr-clients-node
sr-clients: sr-clients-go sr-clients-node
sr-clients-go: $(SR_GO_STAMP)
sr-clients-node: $(SR_NODE_STAMP)

$(SR_GO_STAMP): compat/srgo/go.mod compat/srgo/go.sum
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	cd compat/srgo && go mod download
	touch $@

$(SR_NODE_STAMP): compat/srnode/package.json compat/srnode/package-lock.json
	@command -v npm >/dev/null || { apt-get update -q && apt-get install -y -q npm; }
	cd compat/srnode && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

SETUP_TARGETS += sr-clients
