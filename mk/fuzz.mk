# `make fuzz`: the seeded fuzzer of tests/robustness/test_fuzz.py, longer (FUZZ_FRAMES per port), and the
# security parsers' fuzzers (SASL/SCRAM state machines, the remoting ACL signature check).
FUZZ_FRAMES ?= 200000
FUZZ_SEED ?= 18
.PHONY: fuzz
fuzz: install
	FUZZ_FRAMES=$(FUZZ_FRAMES) FUZZ_SEED=$(FUZZ_SEED) $(PY) -m pytest tests/robustness/test_fuzz.py -q
	$(PY) -m pytest tests/security/test_sasl_fuzz.py tests/security/test_remoting_acl_fuzz.py -q
