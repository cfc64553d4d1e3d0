"""SQL front end: sqlglot AST -> :class:`Query` in the papers' normal form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from .errors import SpjError
from .model import INTEGER, OTHER, TIMESTAMP, Aggregate, Atom, Attr, Const, Output, Query, Term

Schemas = Mapping[str, Sequence[str] | Mapping[str, str]]
_INT_TYPES = {"int", "integer", "bigint", "long", "smallint", "tinyint", "date"}
_TS_TYPES = {"timestamp", "ts"}
_SELECT_ARGS = {"expressions", "from_", "joins", "where", "group", "distinct", "kind"}
_AGGS: dict[type, str] = {exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
                          exp.Median: "MEDIAN"}
_CMP: dict[type, str] = {exp.EQ: "=", exp.LT: "<", exp.GT: ">", exp.LTE: "<=", exp.GTE: ">="}
#: Deepest nesting of parentheses, brackets, CASE and prefix operators the front end accepts
#: (sqlglot's parser recurses about 20 Python frames per level).
MAX_NESTING = 25
_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE,
           TokenType.EXCLAMATION}
_SHOWN = 120  # characters of SQL quoted in an error message


def _position(sql: str, offset: int) -> str:
    """``line L, column C`` (1-based) of a character offset into ``sql``."""
    offset = max(0, min(offset, len(sql)))
    line, column = sql.count("\n", 0, offset) + 1, offset - sql.rfind("\n", 0, offset)
    return f"line {line}, column {column}"


def _shown(text: str) -> str:
    """``text`` cut to a length an error message can quote."""
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _sql(node: exp.Expression) -> str:
    """The node's SQL for an error message (sqlglot prints recursively: deep chains such as
    ``x::int::int...`` or ``a.b.c...`` are named by their type instead)."""
    try:
        return _shown(node.sql())
    except RecursionError:
        return f"{type(node).__name__.upper()} nested too deeply to print"


def _tokens(sql: str) -> list[Token]:
    """sqlglot's tokens of ``sql``; an unterminated string, quoted name or comment is an
    :class:`SpjError` naming where it starts."""
    try:
        return Tokenizer().tokenize(sql)
    except TokenError as err:
        cause = f" ({err.__cause__})" if isinstance(err.__cause__, TokenError) else ""
        start = getattr(err, "end", len(sql))
        raise SpjError(f"syntax error: cannot read the query up to {_position(sql, start)}; an "
                       f"unterminated string, quoted name or comment?{cause}") from None


def _check_nesting(sql: str, tokens: list[Token]) -> None:
    """Refuse nesting deeper than :data:`MAX_NESTING` before sqlglot's recursive parser runs."""
    depth = prefixes = 0
    for tok in tokens:
        kind = tok.token_type
        depth += (kind in _OPEN) - (kind in _CLOSE)
        prefixes = prefixes + 1 if kind in _PREFIX else 0
        if max(depth, 0) + prefixes > MAX_NESTING:
            raise SpjError(f"query nesting deeper than {MAX_NESTING} levels (parentheses, CASE "
                           f"or prefix operators) at {_position(sql, tok.start)}")


def where(node: exp.Expression) -> str:
    """The node's position (line/column) if sqlglot recorded one, else its SQL text."""
    for sub in node.walk():
        if sub.meta.get("line") is not None:
            return f"line {sub.meta['line']}, column {sub.meta['col']}"
    return f"'{_sql(node)}'"


def _unsupported(what: str, node: exp.Expression) -> SpjError:
    return SpjError(f"unsupported {what} at {where(node)}: {_sql(node)}")


def _normalise_schemas(schemas: Schemas, timestamps: Mapping[str, str]):
    columns: dict[str, tuple[str, ...]] = {}
    types: dict[str, dict[str, str]] = {}
    for stream, cols in schemas.items():
        typed = dict(cols) if isinstance(cols, Mapping) else dict.fromkeys(cols, "int")
        kinds = {}
        for col, t in typed.items():
            t = t.lower()
            kinds[col] = INTEGER if t in _INT_TYPES else TIMESTAMP if t in _TS_TYPES else OTHER
        columns[stream] = tuple(typed)
        types[stream] = kinds
    for stream, ts in timestamps.items():
        if stream not in columns:
            raise SpjError(f"timestamps: unknown stream {stream!r}")
        if ts not in columns[stream]:
            raise SpjError(f"timestamps: stream {stream!r} has no column {ts!r}")
        types[stream][ts] = TIMESTAMP
    return columns, types


class _Builder:
    def __init__(self, schemas: Schemas, timestamps: Mapping[str, str]):
        self.columns, self.types = _normalise_schemas(schemas, timestamps)
        self.timestamps = dict(timestamps)
        self.occ: dict[str, str] = {}
        self.atoms: list[Atom] = []

    # -- FROM ---------------------------------------------------------------
    def add_table(self, table: exp.Expression) -> None:
        if not isinstance(table, exp.Table) or table.args.get("db") or table.args.get("catalog"):
            raise _unsupported("FROM item (only stream names with optional aliases)", table)
        name = self._stream(table.name, table)
        alias = table.alias or table.name
        if alias in self.occ:
            raise SpjError(f"duplicate alias {alias!r} at {where(table)}; alias self-joins")
        self.occ[alias] = name

    def _stream(self, name: str, node: exp.Expression) -> str:
        for s in self.columns:
            if s.lower() == name.lower():
                return s
        raise SpjError(f"unknown stream {name!r} at {where(node)}")

    # -- columns ------------------------------------------------------------
    def column(self, col: exp.Expression) -> Attr:
        if not isinstance(col, exp.Column):
            raise _unsupported("expression (only plain columns are allowed)", col)
        name, table = col.name, col.table
        if table:
            occs = [a for a in self.occ if a.lower() == table.lower()]
            if not occs:
                raise SpjError(f"unknown stream or alias {table!r} at {where(col)}")
        else:
            occs = list(self.occ)
        hits = [Attr(o, c) for o in occs for c in self.columns[self.occ[o]]
                if c.lower() == name.lower()]
        if not hits:
            raise SpjError(f"unknown column {_sql(col)!r} at {where(col)}")
        if len(hits) > 1:
            raise SpjError(f"ambiguous column {_sql(col)!r} at {where(col)}; qualify it")
        return hits[0]

    def kind(self, a: Attr) -> str:
        return self.types[self.occ[a.occ]][a.name]

    # -- WHERE --------------------------------------------------------------
    def condition(self, node: exp.Expression) -> None:
        """Add the atoms of a conjunction (walked iteratively: AND chains may be long)."""
        todo = [node]
        while todo:
            node = todo.pop()
            if isinstance(node, exp.Paren):
                todo.append(node.this)
            elif isinstance(node, exp.And):
                todo += [node.expression, node.this]
            elif isinstance(node, exp.Between):
                self.compare(node.this, ">=", node.args["low"], node)
                self.compare(node.this, "<=", node.args["high"], node)
            elif type(node) in _CMP:
                self.compare(node.this, _CMP[type(node)], node.expression, node)
            else:
                raise _unsupported(f"predicate {type(node).__name__.upper()} (only conjunctions "
                                   "of =, <, >, <=, >=, BETWEEN)", node)

    def term(self, node: exp.Expression, ctx: exp.Expression) -> Term:
        if isinstance(node, exp.Paren):
            return self.term(node.this, ctx)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            return -self._int(node.this, ctx)
        if isinstance(node, exp.Literal):
            return self._int(node, ctx)
        if isinstance(node, exp.Column):
            return self.column(node)
        raise _unsupported(f"operand {type(node).__name__.upper()} (no arithmetic or functions "
                           "in predicates)", node)

    def _int(self, lit: exp.Literal, ctx: exp.Expression) -> int:
        if lit.is_string:
            raise SpjError(f"non-integer constant {_sql(lit)} at {where(lit)} in '{_sql(ctx)}': "
                           "comparisons require integer constants")
        try:
            return int(lit.this)
        except ValueError:
            raise SpjError(f"non-integer constant {lit.this} at {where(lit)} in '{_sql(ctx)}': "
                           "comparisons require integer constants") from None

    def compare(self, lhs: exp.Expression, op: str, rhs: exp.Expression,
                ctx: exp.Expression) -> None:
        a, b = self.term(lhs, ctx), self.term(rhs, ctx)
        self._check_types(a, op, b, ctx)
        if op in (">", ">="):
            a, b, op = b, a, op.replace(">", "<")
        if op == "<=" and not (isinstance(a, Attr) and isinstance(b, Attr)):
            # integer closure: x <= k  <=>  x < k + 1 (the papers' strict form)
            a, b = (a - 1, b) if isinstance(a, int) else (a, b + 1)
            op = "<"
        self.atoms.append(Atom(a, op, b))

    def _check_types(self, a: Term, op: str, b: Term, ctx: exp.Expression) -> None:
        kinds = {self.kind(x) if isinstance(x, Attr) else None for x in (a, b)}
        if OTHER in kinds and (op != "=" or kinds != {OTHER}):
            raise SpjError(f"non-integer comparison '{_sql(ctx)}' at {where(ctx)}: non-integer "
                           "attributes may only be compared with '=' to each other")
        if kinds == {INTEGER, TIMESTAMP}:
            raise SpjError(f"comparison of a timestamp with an integer attribute '{_sql(ctx)}' "
                           f"at {where(ctx)}")

    # -- SELECT -------------------------------------------------------------
    def output(self, node: exp.Expression) -> list[Output]:
        if isinstance(node, exp.Alias):
            node = node.this
        if isinstance(node, exp.Paren):
            return self.output(node.this)
        if isinstance(node, exp.Literal) and node.is_string:
            return [Const(node.this)]
        if isinstance(node, exp.Boolean):
            return [Const(bool(node.this))]
        negative = isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)
        if isinstance(node, exp.Literal) or negative:
            lit = node.this if negative else node
            try:
                return [Const(-int(lit.this) if negative else int(lit.this))]
            except ValueError:
                raise _unsupported("SELECT constant (only integers, strings, TRUE and FALSE)",
                                   node) from None
        if isinstance(node, exp.Star):
            return [a for o in self.occ for a in
                    (Attr(o, c) for c in self.columns[self.occ[o]])]
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            occ = self.column_table(node)
            return [Attr(occ, c) for c in self.columns[self.occ[occ]]]
        if isinstance(node, exp.Count):
            arg = node.this
            if isinstance(arg, exp.Star):
                return [Aggregate("COUNT", None)]
            if isinstance(arg, exp.Distinct):
                if len(arg.expressions) != 1:
                    raise _unsupported("COUNT(DISTINCT ...) over several columns", node)
                return [Aggregate("COUNT_DISTINCT", self.column(arg.expressions[0]))]
            return [Aggregate("COUNT", self.column(arg))]
        if type(node) in _AGGS:
            if isinstance(node.this, exp.Distinct):
                raise _unsupported("DISTINCT inside an aggregate other than COUNT", node)
            func, arg = _AGGS[type(node)], self.column(node.this)
            if func in ("SUM", "AVG", "MEDIAN") and self.kind(arg) != INTEGER:
                raise SpjError(f"{func} needs an integer attribute, got {arg} at {where(node)}")
            return [Aggregate(func, arg)]
        if isinstance(node, exp.Column):
            return [self.column(node)]
        raise _unsupported(f"SELECT item {type(node).__name__.upper()}", node)

    def column_table(self, node: exp.Column) -> str:
        for a in self.occ:
            if a.lower() == node.table.lower():
                return a
        raise SpjError(f"unknown stream or alias {node.table!r} at {where(node)}")


def parse(sql: str, schemas: Schemas, timestamps: Mapping[str, str] | None = None) -> Query:
    """Parse and normalise ``sql``; raise :class:`SpjError` for anything outside the class."""
    tokens = _tokens(sql)
    _check_nesting(sql, tokens)
    try:
        tree = sqlglot.parse_one(sql)
    except ParseError as err:
        e = err.errors[0] if err.errors else {}
        at = f" at line {e['line']}, column {e['col']}" if e.get("line") is not None else ""
        raise SpjError(f"syntax error{at}: {_shown(str(e.get('description', err)))}") from None
    except RecursionError:
        raise SpjError(f"query nested too deeply to parse (keep nesting below {MAX_NESTING} "
                       "levels)") from None
    if not isinstance(tree, exp.Select):
        raise _unsupported(f"statement {type(tree).__name__.upper()} (only SELECT)", tree)
    for key, value in tree.args.items():
        if value and key not in _SELECT_ARGS:
            node = value[0] if isinstance(value, list) else value
            shown = node if isinstance(node, exp.Expression) else tree
            raise _unsupported(f"clause {key.upper().rstrip('_')}", shown)
    if isinstance(tree.args.get("distinct"), exp.Distinct) and tree.args["distinct"].args.get("on"):
        raise _unsupported("DISTINCT ON", tree.args["distinct"])
    b = _Builder(schemas, timestamps or {})
    if not tree.args.get("from_"):
        raise SpjError("missing FROM clause")
    b.add_table(tree.args["from_"].this)
    ons = []
    for join in tree.args.get("joins") or []:
        if join.args.get("side") or join.args.get("kind") not in (None, "INNER", "CROSS"):
            raise _unsupported("outer or special JOIN (only inner joins and cross products)", join)
        if join.args.get("using"):
            raise _unsupported("JOIN ... USING", join)
        b.add_table(join.this)
        if join.args.get("on"):
            ons.append(join.args["on"])
    for cond in [*ons, *([tree.args["where"].this] if tree.args.get("where") else [])]:
        b.condition(cond)
    output = [o for node in tree.expressions for o in b.output(node)]
    group = tree.args.get("group")
    group_by = tuple(b.column(g) for g in group.expressions) if group else ()
    if group and any(k for k, v in group.args.items() if v and k != "expressions"):
        raise _unsupported("GROUP BY extension", group)
    aggregate = bool(group_by) or any(isinstance(o, Aggregate) for o in output)
    if aggregate:
        stray = [str(o) for o in output if isinstance(o, Attr) and o not in group_by]
        if stray:
            raise SpjError(f"SELECT columns {', '.join(stray)} must appear in GROUP BY")
    query = Query(occurrences=dict(b.occ), columns=b.columns, types=b.types,
                  output=tuple(output), distinct=bool(tree.args.get("distinct")),
                  atoms=tuple(b.atoms), group_by=group_by, aggregate=aggregate,
                  timestamps=b.timestamps)
    ts_out = [str(a) for a in query.projection if query.type_of(a) == TIMESTAMP]
    if ts_out:
        raise SpjError(f"timestamp attributes may not be projected: {', '.join(ts_out)}")
    return query
