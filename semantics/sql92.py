"""SQL92 property filters (`MessageSelector.bySql`): parse once, evaluate per message.

Grammar (keywords case-insensitive), precedence low → high:

    expr      := and ( OR and )*
    and       := not ( AND not )*
    not       := NOT not | predicate
    predicate := value ( (= | <> | > | >= | < | <=) value
                       | [NOT] BETWEEN value AND value
                       | [NOT] IN ( literal , ... )
                       | IS [NOT] NULL )?
    value     := identifier | literal | [+|-] number | ( expr )
    literal   := 'string' ('' escapes a quote) | 123 | 3.1415 | 1e3 | 0x1F | TRUE | FALSE | NULL

The context is the message properties (strings; user properties plus TAGS, KEYS ...). As in
RocketMQ, a property compared with a number is converted to a number and `>`/`<` between two
strings compare them as numbers; a failed conversion or a missing property makes the predicate
unknown, and only a TRUE result matches (SQL three-valued logic: NOT unknown is unknown).
A malformed expression raises `FilterSyntaxError` with the position of the problem.
"""
from __future__ import annotations

import functools
import re
from typing import Callable

Props = dict[str, str]
Value = Callable[[Props], object]  # returns str | int | float | bool | None


class FilterSyntaxError(ValueError):
    """The expression is not valid; the message says what and where (shown to the client)."""


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>'(?:[^']|'')*')
    | (?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lLdDfF]?)
    | (?P<op><>|!=|>=|<=|=|>|<|\(|\)|,|\+|-)
    | (?P<word>[A-Za-z_$][A-Za-z0-9_$.]*)
    )""",
    re.VERBOSE,
)
MAX_TOKENS = 1000
_KEYWORDS = {"AND", "OR", "NOT", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE"}


def _tokenize(text: str) -> list[tuple[str, object, int]]:
    tokens: list[tuple[str, object, int]] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FilterSyntaxError(f"unexpected character {text[pos:pos + 1]!r} at position {pos}")
        start = m.start(m.lastgroup)
        kind, raw = m.lastgroup, m.group(m.lastgroup)
        if kind == "str":
            tokens.append(("lit", raw[1:-1].replace("''", "'"), start))
        elif kind == "num":
            tokens.append(("lit", _number(raw, start), start))
        elif kind == "word" and raw.upper() in _KEYWORDS:
            word = raw.upper()
            if word in ("TRUE", "FALSE"):
                tokens.append(("lit", word == "TRUE", start))
            elif word == "NULL":
                tokens.append(("null", None, start))
            else:
                tokens.append((word, word, start))
        elif kind == "word":
            tokens.append(("ident", raw, start))
        else:
            tokens.append((raw, raw, start))
        pos = m.end()
    tokens.append(("end", None, end))
    return tokens


def _number(raw: str, pos: int) -> int | float:
    try:
        if raw[:2].lower() == "0x":
            return int(raw, 16)
        body = raw.rstrip("lLdDfF")
        if any(c in body for c in ".eE"):
            return float(body)
        return int(body)
    except ValueError:
        raise FilterSyntaxError(f"bad number {raw!r} at position {pos}") from None


def _as_number(v: object) -> int | float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            try:
                return float(v)
            except ValueError:
                return None
    return None


def _compare(lv: object, rv: object) -> int | None:
    """-1/0/1, or None when either side is missing or the two cannot be compared."""
    if lv is None or rv is None:
        return None
    if isinstance(lv, bool) or isinstance(rv, bool):
        if isinstance(lv, str):
            lv = lv.strip().lower() == "true"
        if isinstance(rv, str):
            rv = rv.strip().lower() == "true"
        if not (isinstance(lv, bool) and isinstance(rv, bool)):
            return None
        return (lv > rv) - (lv < rv)
    if isinstance(lv, str) and isinstance(rv, str):
        return (lv > rv) - (lv < rv)
    ln, rn = _as_number(lv), _as_number(rv)
    if ln is None or rn is None:
        return None
    return (ln > rn) - (ln < rn)


def _order(lv: object, rv: object) -> int | None:
    """Comparison for > >= < <= : two strings are compared as numbers (RocketMQ does the same)."""
    if isinstance(lv, str) and isinstance(rv, str):
        lv, rv = _as_number(lv), _as_number(rv)
    return _compare(lv, rv)


_ORDER_OPS = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class _Parser:
    """Recursive descent over the token list; each rule returns (kind, closure), kind ∈ {bool, value}."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        if len(self.tokens) > MAX_TOKENS:  # evaluation recurses once per operator: keep it shallow
            raise FilterSyntaxError(f"expression longer than {MAX_TOKENS} tokens")
        self.i = 0

    def peek(self) -> str:
        return self.tokens[self.i][0]

    def take(self, kind: str | None = None):
        tok = self.tokens[self.i]
        if kind is not None and tok[0] != kind:
            self.fail(f"expected {kind}")
        self.i += 1
        return tok

    def fail(self, what: str):
        kind, value, pos = self.tokens[self.i]
        near = "end of expression" if kind == "end" else repr(self.text[pos:pos + 20])
        raise FilterSyntaxError(f"{what} at position {pos} (near {near})")

    def parse(self) -> Callable[[Props], object]:
        if self.peek() == "end":
            self.fail("empty expression")
        kind, fn = self.or_expr()
        if self.peek() != "end":
            self.fail("unexpected token")
        if kind != "bool":
            raise FilterSyntaxError(f"expression {self.text!r} does not give a boolean result")
        return fn

    def boolean(self, node, what: str):
        kind, fn = node
        if kind != "bool":
            self.fail(f"operand of {what} is not a condition")
        return fn

    def or_expr(self):
        return self.logical("OR", self.and_expr, True)

    def and_expr(self):
        return self.logical("AND", self.not_expr, False)

    def logical(self, word: str, operand, decisive: bool):
        """`operand (word operand)*` with SQL three-valued logic: one `decisive` side decides
        (TRUE for OR, FALSE for AND); otherwise an unknown side makes the result unknown."""
        node = operand()
        while self.peek() == word:
            self.take()
            left, right = self.boolean(node, word), self.boolean(operand(), word)

            def f(p, left=left, right=right):
                a = left(p)
                if a is decisive:
                    return decisive
                b = right(p)
                if b is decisive:
                    return decisive
                return None if a is None or b is None else not decisive
            node = ("bool", f)
        return node

    def not_expr(self):
        if self.peek() == "NOT":
            self.take()
            inner = self.boolean(self.not_expr(), "NOT")
            return ("bool", lambda p: None if (v := inner(p)) is None else not v)
        return self.predicate()

    def predicate(self):
        left_node = self.value()
        left = left_node[1]
        op = self.peek()
        if op in ("=", "<>", "!="):
            self.take()
            right = self.operand(allow_null=False, what=op)
            want = op == "="
            return ("bool", lambda p: None if (c := _compare(left(p), right(p))) is None else (c == 0) == want)
        if op in _ORDER_OPS:
            self.take()
            right = self.operand(allow_null=False, what=op, ordered=True)
            test = _ORDER_OPS[op]
            return ("bool", lambda p: None if (c := _order(left(p), right(p))) is None else test(c))
        negate = False
        if op == "NOT" and self.tokens[self.i + 1][0] in ("BETWEEN", "IN"):
            self.take()
            negate, op = True, self.peek()
        if op == "BETWEEN":
            self.take()
            low = self.operand(allow_null=False, what="BETWEEN", ordered=True)
            self.take("AND")
            high = self.operand(allow_null=False, what="BETWEEN", ordered=True)

            def between(p):
                v = left(p)
                a, b = _order(v, low(p)), _order(v, high(p))
                if a is None or b is None:
                    return None
                return (a >= 0 and b <= 0) != negate
            return ("bool", between)
        if op == "IN":
            self.take()
            self.take("(")
            items = [self.in_literal()]
            while self.peek() == ",":
                self.take()
                items.append(self.in_literal())
            self.take(")")
            strings = frozenset(i for i in items if isinstance(i, str))
            others = [i for i in items if not isinstance(i, str)]

            def in_list(p):
                v = left(p)
                if v is None:
                    return None
                hit = v in strings if isinstance(v, str) else False
                if not hit:
                    hit = any(_compare(v, o) == 0 for o in others) or (
                        not isinstance(v, str) and any(_compare(v, s) == 0 for s in strings))
                return hit != negate
            return ("bool", in_list)
        if op == "IS":
            self.take()
            is_not = self.peek() == "NOT"
            if is_not:
                self.take()
            self.take("null")
            return ("bool", lambda p: (left(p) is None) != is_not)
        return left_node

    def in_literal(self):
        sign = 1
        if self.peek() in ("+", "-"):
            sign = -1 if self.take()[0] == "-" else 1
        kind, value, _ = self.take()
        if kind != "lit" or isinstance(value, bool) or (sign == -1 and isinstance(value, str)):
            self.i -= 1
            self.fail("IN takes a list of string or number constants")
        return -value if sign == -1 else value

    def operand(self, allow_null: bool, what: str, ordered: bool = False):
        if self.peek() == "null" and not allow_null:
            self.fail(f"NULL cannot be used with {what} (use IS NULL / IS NOT NULL)")
        tok = self.tokens[self.i]
        kind, fn = self.value()
        if kind == "bool" and ordered:
            self.i -= 1
            self.fail(f"a condition cannot be used with {what}")
        if ordered and tok[0] == "lit" and isinstance(tok[1], (str, bool)):
            raise FilterSyntaxError(
                f"{tok[1]!r} at position {tok[2]} cannot be used with {what} (numbers only)")
        return fn

    def value(self):
        kind, val, pos = self.tokens[self.i]
        if kind == "ident":
            self.take()
            return ("value", lambda p, name=val: p.get(name))
        if kind == "lit":
            self.take()
            return ("bool" if isinstance(val, bool) else "value", lambda p, v=val: v)
        if kind == "null":
            self.take()
            return ("value", lambda p: None)
        if kind in ("+", "-"):
            self.take()
            nkind, nval, _ = self.tokens[self.i]
            if nkind != "lit" or isinstance(nval, (bool, str)):
                self.fail(f"a number must follow unary {kind}")
            self.take()
            num = -nval if kind == "-" else nval
            return ("value", lambda p, v=num: v)
        if kind == "(":
            self.take()
            node = self.or_expr()
            self.take(")")
            return node
        self.fail("expected a property name, a constant or '('")


class Selector:
    """A compiled SQL92 filter: `matches(properties)` is True only when the expression is TRUE."""

    __slots__ = ("expression", "_fn")

    def __init__(self, expression: str, fn) -> None:
        self.expression = expression
        self._fn = fn

    def matches(self, properties: Props) -> bool:
        return self._fn(properties) is True

    matches_properties = matches  # the TagFilter-compatible name (see subscription_filter)

    @staticmethod
    def matches_code(tags_code: int) -> bool:
        """SQL92 cannot decide on the tags code: every unit is read and evaluated."""
        return True

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


@functools.lru_cache(maxsize=1024)
def compile_sql(expression: str) -> Selector:
    """Parse an expression (cached: every pull of a subscription reuses it); FilterSyntaxError if bad."""
    if expression is None or not expression.strip():
        raise FilterSyntaxError("empty expression")
    try:
        return Selector(expression, _Parser(expression).parse())
    except RecursionError:
        raise FilterSyntaxError("expression nested too deeply") from None


def subscription_filter(expression_type: str | None, expression: str | None):
    """The filter of a subscription, TAG (default) or SQL92, with one interface for pulls:
    `store.read(..., tag_filter=f.matches_code)`, then keep `f.matches_properties(msg.properties)`.
    Raises FilterSyntaxError for a bad SQL92 expression or an unknown type."""
    from codec.remoting.tags import parse_tags

    kind = (expression_type or "TAG").upper()
    if kind == "TAG":
        return parse_tags(expression)
    if kind == "SQL92":
        return compile_sql(expression or "")
    raise FilterSyntaxError(f"unsupported expression type {expression_type!r}")
