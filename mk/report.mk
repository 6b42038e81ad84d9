# `make compat-report` (not part of `make test`): franz-go's own kgo tests (Go module pinned in
# compat/report/franzgo/go.mod), the Java client scenarios and the cross-protocol matrix, each against the real
# brokers and then the gateway; writes docs/compat-report.md (see compat/report/__main__.py).
.PHONY: compat-report compat-report-go
compat-report-go:
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	cd compat/report/franzgo && go mod download

compat-report: setup compat-report-go
	$(PY) -m compat.report $(REPORT_SUITES)
