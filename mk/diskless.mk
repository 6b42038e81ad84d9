# Diskless topics (docs/diskless.md): the guarantee tests (real gateways, SeaweedFS, real clients; a few
# minutes; the latest output committed in tests/diskless_results.txt) and the interleaved diskless-vs-plain
# benchmark (under a minute after SeaweedFS starts).
.PHONY: test-diskless bench-diskless
test-diskless: setup
	bash -o pipefail -c '$(PY) -m pytest tests/diskless -q $(PYTEST_ARGS) 2>&1 | tee tests/diskless_results.txt'

bench-diskless: setup
	$(PY) -m bench.diskless $(DISKLESS_BENCH_ARGS)
