# Diskless topics (docs/diskless.md): the guarantee tests (real gateways, SeaweedFS, real clients; a few
# minutes) and the interleaved diskless-vs-plain benchmark (under a minute after SeaweedFS starts).
.PHONY: test-diskless bench-diskless
test-diskless: setup
	$(PY) -m pytest tests/diskless -q

bench-diskless: setup
	$(PY) -m bench.diskless $(DISKLESS_BENCH_ARGS)
