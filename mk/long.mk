# The long cases (tests/long_tests.txt): server stops and restarts, kill -9 loops, browser walks. Kept out of
# `make test` for its time budget; run here and their latest output committed in tests/long_results.txt.
.PHONY: test-long
test-long: setup
	bash -o pipefail -c '$(PY) -m pytest -m long $(PYTEST_ARGS) 2>&1 | tee tests/long_results.txt'
