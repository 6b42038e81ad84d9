"""SQL92 property filters: the MessageSelector.bySql grammar over a properties dict."""
import pytest

from semantics.sql92 import FilterSyntaxError, compile_sql

PROPS = {"a": "5", "b": "abc", "f": "3.25", "flag": "true", "TAGS": "TagB", "neg": "-2"}


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("a > 3", True),
        ("a > 5", False),
        ("a >= 5", True),
        ("a < 10 AND a <= 5", True),
        ("a = 5", True),
        ("a <> 5", False),
        ("a != 4", True),
        ("f > 3.2", True),
        ("f < 3.2", False),
        ("neg < -1", True),
        ("a BETWEEN 0 AND 5", True),
        ("a BETWEEN 6 AND 9", False),
        ("a NOT BETWEEN 6 AND 9", True),
        ("b = 'abc'", True),
        ("b = 'ABC'", False),
        ("b <> 'x'", True),
        ("b IN ('x', 'abc')", True),
        ("b NOT IN ('x', 'abc')", False),
        ("TAGS in ('TagA','TagB') and a > 1", True),
        ("b IS NOT NULL", True),
        ("missing IS NULL", True),
        ("missing IS NOT NULL", False),
        ("flag = TRUE", True),
        ("flag = FALSE", False),
        ("TRUE", True),
        ("a > 3 OR missing > 1", True),
        ("a > 9 OR missing > 1", False),
        ("NOT (a > 9)", True),
        ("NOT a > 9", True),
        ("not (a > 3 and b = 'abc')", False),
        ("(a > 9 or b = 'abc') and not (f < 1)", True),
        ("a = 0x5", True),
        ("'abc' = b", True),
        ("x = 'it''s'", False),
    ],
)
def test_evaluation(expr, expected):
    assert compile_sql(expr).matches(PROPS) is expected


def test_missing_property_is_unknown_not_false():
    # NOT unknown is unknown, so neither the test nor its negation matches.
    assert not compile_sql("missing > 1").matches(PROPS)
    assert not compile_sql("NOT (missing > 1)").matches(PROPS)
    assert not compile_sql("missing NOT IN ('a')").matches(PROPS)


def test_non_numeric_property_never_matches_numeric_test():
    assert not compile_sql("b > 1").matches(PROPS)
    assert not compile_sql("b < 1").matches(PROPS)
    assert not compile_sql("b = 1").matches(PROPS)


def test_quote_escape():
    assert compile_sql("x = 'it''s'").matches({"x": "it's"})


def test_keywords_case_insensitive():
    assert compile_sql("a between 1 and 9 AnD b is not null").matches(PROPS)


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "   ",
        "a >",
        "a > 'abc'",
        "a = NULL",
        "a BETWEEN 1",
        "a IN ()",
        "a IN (b)",
        "(a > 1",
        "a > 1)",
        "a > 1 AND",
        "a",
        "'abc'",
        "a > 1 b < 2",
        "a # 1",
        "a IS 5",
        "NOT a",
        "a > 1 AND b",
        "a = 1e",
    ],
)
def test_malformed_expressions_are_refused(expr):
    with pytest.raises(FilterSyntaxError):
        compile_sql(expr)


def test_error_names_position():
    with pytest.raises(FilterSyntaxError, match="position 4"):
        compile_sql("a > 'abc'")


def test_subscription_filter_one_interface():
    from semantics.sql92 import subscription_filter
    from codec.remoting.message import tag_hash

    tag = subscription_filter("TAG", "A || B")
    assert tag.matches_code(tag_hash("A")) and not tag.matches_code(tag_hash("C"))
    assert tag.matches_properties({"TAGS": "B"}) and not tag.matches_properties({"TAGS": "C"})
    assert subscription_filter(None, None).matches_properties({})
    sql = subscription_filter("SQL92", "a > 1")
    assert sql.matches_code(12345)
    assert sql.matches_properties({"a": "2"}) and not sql.matches_properties({"a": "0"})
    with pytest.raises(FilterSyntaxError):
        subscription_filter("SQL92", "a >")
    with pytest.raises(FilterSyntaxError):
        subscription_filter("CLASS", "x")


from hypothesis import given, settings, strategies as st_

_PIECES = ["a", "b", "TAGS", "(", ")", "AND", "OR", "NOT", "=", "<>", ">", ">=", "<", "<=", "BETWEEN", "IN",
           "IS", "NULL", "TRUE", "FALSE", "'x'", "'it''s'", "1", "-2", "3.5", "1e3", "0x1F", ",", "#", "'", "."]


@settings(max_examples=400, deadline=None)
@given(st_.lists(st_.sampled_from(_PIECES), max_size=12), st_.dictionaries(
    st_.sampled_from(["a", "b", "TAGS"]), st_.sampled_from(["1", "x", "true", "", "3.5", "-2"])))
def test_any_input_either_compiles_or_is_refused_cleanly(pieces, props):
    try:
        sel = compile_sql(" ".join(pieces))
    except FilterSyntaxError:
        return
    assert sel.matches(props) in (True, False)


@settings(max_examples=200, deadline=None)
@given(st_.text(max_size=40))
def test_arbitrary_text_never_crashes(text):
    try:
        compile_sql(text).matches({"a": "1"})
    except FilterSyntaxError:
        pass


def test_deep_nesting_is_refused():
    with pytest.raises(FilterSyntaxError):
        compile_sql("(" * 5000 + "a > 1" + ")" * 5000)
    with pytest.raises(FilterSyntaxError):
        compile_sql("NOT " * 5000 + "a > 1")


def test_long_chains_are_refused_or_evaluate():
    chain = " AND ".join(["a > 1"] * 240)
    assert compile_sql(chain).matches({"a": "2"})
    with pytest.raises(FilterSyntaxError, match="longer than"):
        compile_sql(" AND ".join(["a > 1"] * 5000))
