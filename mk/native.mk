# Native helpers loaded with ctypes (plain C, no Python headers); each has a pure-Python fallback, so a
# machine without a C compiler still runs, only slower. codec/native/schema_ids.c: the id level of
# schema validation (docs/schema-registry.md, "Cost").
CC ?= cc
NATIVE_LIBS := codec/native/libschemaids.so

codec/native/libschemaids.so: codec/native/schema_ids.c
	$(CC) -O2 -shared -fPIC -o $@ $< || echo "native: $@ not built (no C compiler?): the slower fallback runs"

.PHONY: native
native: $(NATIVE_LIBS)
SETUP_TARGETS += native
