"""Hypothesis strategies shared by the agreement tests: values every layout can hold."""
from __future__ import annotations

from hypothesis import strategies as st

i8 = st.integers(-(1 << 7), (1 << 7) - 1)
i16 = st.integers(-(1 << 15), (1 << 15) - 1)
i32 = st.integers(-(1 << 31), (1 << 31) - 1)
i64 = st.integers(-(1 << 63), (1 << 63) - 1)
u31 = st.integers(0, (1 << 31) - 1)
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
# text without the property separators and without surrogates (UTF-8 must round-trip)
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\x01\x02"), max_size=20)
prop_names = text.filter(lambda s: s and s not in ("INNER_NUM", "TAGS_CODES", "INNER_KEYS"))
properties = st.dictionaries(prop_names, text, max_size=5)
topics = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda s: len(s.encode()) <= 127)
blobs = st.binary(max_size=200)
