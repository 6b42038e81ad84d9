# docs/formats.md is generated from the construct definitions in codec/formats/ (issue 29).
.PHONY: formats-doc

formats-doc: install
	$(PY) -m codec.formats.doc docs/formats.md
