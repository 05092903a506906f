"""Property tests over PostgREST's query grammar through HTTP (hypothesis): whatever a client puts in the query
string, the Prefer header or a write's body, the server answers below 500, never lets a SQL syntax error (42601) or
an internal error (XX000) reach the client, never binds a parameter PostgreSQL cannot type (42P18, a statement
built wrong), and every error body is PostgREST's four keys with a string code.

Random operators (with not., (any)/(all), fts configs), quoting and backslash escapes, percent-encoding (full,
partial, `+` for spaces, stray `%`), huge in.() lists, deep or/and trees, select strings with aliases, casts, JSON
paths, embeddings (`users`, `reading_notes` when present, hints, !inner, spreads, aggregates, null filters on their
names), order/limit/offset, on embeddings too. Bounded: a fixed number of examples per property (1,050 requests in
all, well under a minute, checked by the last test), no deadline, no example database on disk. The same query strings
shape functions' rows (RPC).
"""

from __future__ import annotations

import json
import string
import time
import uuid
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HTTP_TIMEOUT, api_headers, new_device_secret
from support import bearer_headers, raw_request

REST = "/rest/v1/"
ERROR_KEYS = {"code", "message", "details", "hint"}
# SQLSTATEs that mean the server built a wrong statement from user input (never the user's fault).
FORBIDDEN_CODES = {"42601": "syntax error", "XX000": "internal error", "42P18": "parameter of undeterminable type",
                   "08P01": "protocol violation", "42P08": "ambiguous parameter"}
FUZZ = settings(max_examples=300, deadline=None, database=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])
SMALL_FUZZ = settings(FUZZ, max_examples=150)
TIME_BUDGET = 60.0  # seconds the whole module may take


class Target:
    def __init__(self, server, app, http: httpx.Client):
        self.server = server
        self.http = http
        signed = self.http.post(server.url + "/auth/v1/signup", headers=api_headers(app),
                                json={"data": {"device_id": new_device_secret()}})
        assert signed.status_code == 200, signed.text
        self.user_id = signed.json()["user"]["id"]
        self.headers = bearer_headers(app, signed.json()["access_token"])
        rows = [{"kind": k, "content": c} for k, c in (("face", {"a": 1, "b": "x,y"}), ("palm", {"a": [1, 2]}),
                                                      ("coffee", {}))]
        assert self.http.post(server.url + REST + "readings", headers=self.headers, json=rows).status_code == 201
        self.has_notes = self.http.get(server.url + REST + "reading_notes?limit=0",
                                       headers=self.headers).status_code == 200
        self.started = time.monotonic()
        self.sent = 0

    def send(self, method: str, target: str, headers: dict | None = None, content: bytes | None = None):
        self.sent += 1
        all_headers = {**self.headers, **(headers or {})}
        if len(target) > 60_000:  # beyond httpx's URL limit: the raw socket of support.py
            answer = raw_request(self.server, method, REST + target,
                                 [(k.encode(), v.encode()) for k, v in all_headers.items() if k != "Content-Type"],
                                 content or b"")
            assert answer.status is not None, f"no answer to a {len(target)}-byte target"
            return httpx.Response(answer.status, headers=answer.headers, content=answer.body)
        return self.http.request(method, self.server.url + REST + target, headers=all_headers, content=content)


@pytest.fixture(scope="module")
def target(server, app):
    with httpx.Client(timeout=HTTP_TIMEOUT) as http:
        yield Target(server, app, http)


def check(response: httpx.Response, what: str) -> None:
    assert response.status_code < 500, f"{what} → {response.status_code} {response.text[:500]}"
    if response.status_code < 400 or not response.content:
        return  # HEAD errors have no body
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{what} → {response.status_code} non-JSON error {response.text[:300]!r}") from None
    assert isinstance(body, dict) and set(body) == ERROR_KEYS, f"{what} → error keys {body!r}"[:800]
    assert isinstance(body["code"], str) and body["code"], f"{what} → {body!r}"
    assert isinstance(body["message"], str), f"{what} → {body!r}"
    assert body["code"] not in FORBIDDEN_CODES, \
        f"{what} → {response.status_code} {FORBIDDEN_CODES[body['code']]}: {body!r}"[:1200]


# ---------------------------------------------------------------- strategies

# Column names, and embedding names (a null filter on an embedding's name is an existence test).
COLUMNS = ["id", "app_id", "user_id", "kind", "content", "created_at", "users", "reading_notes"]
RESERVED = ',.:()"\\*%{}[]!&=+ -><@|;\''
NAME_CHARS = string.ascii_letters + string.digits + "_" + RESERVED + "é\u00a0日\t"
OPERATORS = ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "match", "imatch", "is", "isdistinct", "in",
             "cs", "cd", "ov", "sl", "sr", "nxl", "nxr", "adj", "fts", "plfts", "phfts", "wfts"]
QUANTIFIABLE = ["eq", "like", "ilike", "gt", "gte", "lt", "lte", "match", "imatch"]

raw_text = st.text(alphabet=st.sampled_from(list(NAME_CHARS)), max_size=12)
identifier = st.one_of(st.sampled_from(COLUMNS), st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), raw_text,
                       raw_text.map(lambda s: '"' + s.replace('"', '\\"') + '"'))
json_path = st.builds(lambda col, steps: col + "".join(steps),
                      st.sampled_from(["content", "kind", "id"] + ["nope"]),
                      st.lists(st.tuples(st.sampled_from(["->", "->>"]),
                                         st.one_of(st.from_regex(r"[a-z]{1,4}", fullmatch=True),
                                                   st.integers(-3, 3).map(str), raw_text))
                               .map(lambda t: t[0] + t[1]), min_size=1, max_size=3))
column = st.one_of(identifier, json_path)
scalar = st.one_of(
    raw_text,
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.uuids().map(str),
    st.sampled_from(["null", "NULL", "true", "false", "unknown", "not_null", "", "*", "%", "face", "palm", "coffee",
                     "2026-01-01T00:00:00+00:00", "2026-13-45", "infinity", "{}", "[]", "{a,b}", "{\"a\":1}",
                     "[1,5)", "(,)", "'", "''", "\\", "$1", "1; select 1", "a'); drop table readings; --"]),
)


def quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


list_item = st.one_of(scalar, scalar.map(quoted))
in_list = st.one_of(
    st.lists(list_item, max_size=8).map(lambda items: "(" + ",".join(items) + ")"),
    st.integers(0, 3000).map(lambda n: "(" + ",".join(str(uuid.UUID(int=i)) for i in range(n)) + ")"),
    st.sampled_from(["(", ")", "()", "(,)", '(")', '("a"b)', "(a,(b))"]),
)
operator = st.one_of(
    st.sampled_from(OPERATORS),
    st.builds(lambda op, q: f"{op}({q})", st.sampled_from(QUANTIFIABLE), st.sampled_from(["any", "all", "some", ""])),
    st.builds(lambda op, cfg: f"{op}({cfg})", st.sampled_from(["fts", "plfts", "phfts", "wfts"]),
              st.one_of(st.sampled_from(["english", "simple", "nope"]), raw_text)),
    raw_text,
)


def filter_value(op: str, value: str, items: str) -> str:
    return f"{op}.{items}" if op.startswith("in") or op.endswith("(any)") or op.endswith("(all)") else f"{op}.{value}"


leaf_value = st.builds(lambda negate, op, value, items: ("not." if negate else "") + filter_value(op, value, items),
                       st.booleans(), operator, scalar, in_list)


def tree_leaf():
    return st.builds(lambda col, value: f"{col}.{value}", column, leaf_value)


logic_tree = st.recursive(
    tree_leaf(),
    lambda children: st.builds(lambda negate, kind, kids: ("not." if negate else "") + kind + "(" + ",".join(kids) + ")",
                               st.booleans(), st.sampled_from(["or", "and"]), st.lists(children, min_size=1, max_size=4)),
    max_leaves=24,
)
deep_tree = st.integers(10, 60).map(lambda depth: "(" + "or(" * depth + "kind.eq.face" + ")" * depth + ")")

RELATIONS = ["users", "readings", "devices", "device_logs", "reading_notes", "nope"]
CAST_TYPES = ["text", "int", "int8", "numeric", "jsonb", "uuid", "timestamptz", "bool", "text[]", "varchar(3)",
              "double precision", "pg_catalog.text", "text; drop"]
select_leaf = st.one_of(
    st.just("*"),
    column,
    st.builds(lambda alias, col: f"{alias}:{col}", identifier, column),
    st.builds(lambda col, typ: f"{col}::{typ}", column, st.one_of(st.sampled_from(CAST_TYPES), raw_text)),
    st.sampled_from(["count()", "id.count()", "content->a.sum()", "...users(*)"]),
)
select_list = st.recursive(
    select_leaf,
    lambda inner: st.builds(
        lambda alias, rel, hint, inner_join, spread, fields: (
            ("..." if spread else "") + (alias + ":" if alias else "") + rel + (("!" + hint) if hint else "")
            + ("!inner" if inner_join else "") + "(" + ",".join(fields) + ")"),
        st.one_of(st.none(), identifier), st.sampled_from(RELATIONS),
        st.one_of(st.none(), st.sampled_from(["readings_user_id_fkey", "reading_notes_reading_id_fkey", "left",
                                              "inner", "nope"]), raw_text),
        st.booleans(), st.booleans(), st.lists(inner, min_size=0, max_size=4)),
    max_leaves=12,
).flatmap(lambda first: st.lists(select_leaf, max_size=3).map(lambda rest: ",".join([first, *rest])))
order_term = st.builds(lambda col, direction, nulls: col + direction + nulls, column,
                       st.sampled_from(["", ".asc", ".desc", ".sideways"]),
                       st.sampled_from(["", ".nullsfirst", ".nullslast", ".nulls"]))
order_value = st.lists(order_term, min_size=1, max_size=3).map(",".join)
number_text = st.one_of(st.integers(-5, 2000).map(str), st.sampled_from(["", "x", "1.5", "99999999999999999999", "-0",
                                                                        " 1", "1e3"]))
PREFER = ["return=representation", "return=minimal", "return=headers-only", "count=exact", "count=planned",
          "count=estimated", "resolution=merge-duplicates", "resolution=ignore-duplicates", "missing=default",
          "missing=null", "handling=strict", "handling=lenient", "max-affected=1", "max-affected=-1",
          "max-affected=x", "tx=commit", "timezone=UTC", "timezone=Nowhere/Else", "return", "=", ",,", "foo=bar"]
header_text = st.text(alphabet=st.sampled_from(list(string.ascii_letters + string.digits + RESERVED)), max_size=12)
prefer_header = st.lists(st.one_of(st.sampled_from(PREFER), header_text), max_size=4).map(", ".join).map(str.strip)
ACCEPTS = ["application/json", "*/*", "application/vnd.pgrst.object+json", "application/vnd.pgrst.object",
           "application/vnd.pgrst.array+json;nulls=stripped", "text/csv", "application/geo+json",
           "application/vnd.pgrst.plan+json", "text/plain;q=0.5, application/json", "garbage/", ""]


def encode(value: str, mode: str) -> str:
    """`value` percent-encoded for a query string: fully, leaving the grammar's punctuation, with `+` for spaces."""
    if mode == "all":
        return "".join(f"%{b:02X}" for b in value.encode())
    if mode == "grammar":
        return quote(value, safe=",.:()!*-_~'\"{}[]<>@|;$")
    if mode == "plus":
        return quote(value, safe=",.:()!*").replace("%20", "+")
    return quote(value, safe="")


encoding = st.sampled_from(["all", "grammar", "plus", "strict"])
query_key = st.one_of(column, st.builds(lambda rel, key: f"{rel}.{key}", st.sampled_from(RELATIONS),
                                        st.one_of(column, st.sampled_from(["or", "and", "order", "limit", "offset"]))))
param = st.one_of(
    st.tuples(query_key, leaf_value),
    st.tuples(st.sampled_from(["or", "and", "not.or", "not.and", "users.or", "reading_notes.and"]),
              st.one_of(logic_tree.map(lambda t: "(" + t + ")"), deep_tree, raw_text)),
    st.tuples(st.just("select"), select_list),
    st.tuples(st.sampled_from(["order", "users.order", "reading_notes.order"]), order_value),
    st.tuples(st.sampled_from(["limit", "offset", "users.limit", "reading_notes.offset"]), number_text),
    st.tuples(st.sampled_from(["columns", "on_conflict"]), st.lists(identifier, max_size=4).map(",".join)),
)


def build_query(params, mode: str) -> str:
    return "&".join(f"{encode(k, mode)}={encode(v, mode)}" for k, v in params)


# ---------------------------------------------------------------- properties


@FUZZ
@given(params=st.lists(param, min_size=1, max_size=5), mode=encoding,
       table=st.sampled_from(["readings", "readings", "users", "devices", "reading_notes", "device_logs"]),
       method=st.sampled_from(["GET", "GET", "GET", "HEAD"]), prefer=prefer_header,
       accept=st.sampled_from(ACCEPTS), range_header=st.one_of(st.none(), st.from_regex(r"[0-9]{0,3}-[0-9]{0,3}",
                                                                                         fullmatch=True)))
def test_reads_never_break_the_server(target, params, mode, table, method, prefer, accept, range_header):
    query = build_query(params, mode)
    headers = {"Prefer": prefer} if prefer else {}
    if accept:
        headers["Accept"] = accept
    if range_header is not None:
        headers["Range"] = range_header
    check(target.send(method, f"{table}?{query}", headers), f"{method} {table}?{query} {headers}")


@FUZZ
@given(tree=st.one_of(logic_tree, deep_tree.map(lambda t: t[1:-1])), key=st.sampled_from(["or", "and", "not.or"]),
       mode=encoding)
def test_logic_trees_never_break_the_server(target, tree, key, mode):
    query = f"select=id&{encode(key, mode)}={encode('(' + tree + ')', mode)}"
    check(target.send("GET", f"readings?{query}"), f"GET readings?{query}")


@SMALL_FUZZ
@given(select=select_list, mode=encoding, table=st.sampled_from(["readings", "users", "reading_notes"]),
       embedded=st.lists(st.tuples(st.sampled_from(["users", "reading_notes", "readings"]),
                                   st.sampled_from(["order", "limit", "offset", "kind", "body", "id", "language"]),
                                   st.one_of(order_value, number_text, leaf_value)), max_size=3))
def test_select_strings_never_break_the_server(target, select, mode, table, embedded):
    params = [("select", select)] + [(f"{rel}.{key}", value) for rel, key, value in embedded]
    query = build_query(params, mode)
    check(target.send("GET", f"{table}?{query}"), f"GET {table}?{query}")


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=False), raw_text),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(raw_text, children, max_size=3)),
    max_leaves=8,
)
row = st.dictionaries(st.one_of(st.sampled_from(["kind", "content", "id", "created_at", "user_id"]), raw_text),
                      json_values, max_size=4)
bodies = st.one_of(
    row.map(json.dumps), st.lists(row, max_size=4).map(json.dumps),
    st.builds(lambda kind, content: json.dumps({"kind": kind, "content": content}),
              st.sampled_from(["face", "palm", "coffee", "tarot"]), json_values),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    st.sampled_from(["", "{", "[]", "[{}]", "{}", "null", "1", '"x"', '{"kind": "face"}{', '[{"kind":"face"},1]',
                     '{"kind":"face","kind":"palm"}', '{"kind":"\\u0000"}', '{"kind":"\\ud800"}']),
)


@SMALL_FUZZ
@given(method=st.sampled_from(["POST", "PATCH", "DELETE", "PUT", "OPTIONS", "TRACE"]),
       params=st.lists(param, max_size=3), mode=encoding, body=bodies, prefer=prefer_header,
       content_type=st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain",
                                     "application/x-www-form-urlencoded", "text/csv", ""]),
       accept=st.sampled_from(ACCEPTS))
def test_writes_never_break_the_server(target, method, params, mode, body, prefer, content_type, accept):
    if method in ("PATCH", "DELETE"):
        params = [*params, ("user_id", f"eq.{target.user_id}")]  # this guest's rows only, and never unfiltered
    query = build_query(params, mode)
    headers = {"Prefer": prefer, "Content-Type": content_type, "Accept": accept}
    headers = {k: v for k, v in headers.items() if v}
    response = target.send(method, f"readings?{query}", headers, body.encode("utf-8", "surrogatepass"))
    if method in ("OPTIONS", "TRACE") and response.status_code < 400:
        return  # CORS pre-flight or the framework's own answer; no JSON body required
    check(response, f"{method} readings?{query} {headers} body={body[:200]!r}")


@SMALL_FUZZ
@given(function=st.sampled_from(["list_readings", "add_reading", "count_readings", "get_quota", "readings_summary",
                                 "nope"]),
       method=st.sampled_from(["GET", "POST", "HEAD"]), params=st.lists(param, max_size=4), mode=encoding,
       arguments=st.dictionaries(st.sampled_from(["p_kind", "p_content", "p_user_id", "x"]), json_values, max_size=2),
       prefer=prefer_header, accept=st.sampled_from(ACCEPTS))
def test_rpc_rows_under_the_grammar_never_break_the_server(target, function, method, params, mode, arguments, prefer,
                                                           accept):
    """A function's rows take the table grammar: the same random query strings, on GET (where a pair that is no
    filter is an argument) and POST, never reach a 5xx or a statement built wrong."""
    if method == "POST":
        params = [p for p in params if p[0] != "kind"]  # add_reading writes: keep it to this guest's own rows anyway
        body = json.dumps(arguments).encode()
    else:
        params = [*params, *((k, v if isinstance(v, str) else json.dumps(v)) for k, v in arguments.items())]
        body = None
    query = build_query(params, mode)
    headers = {"Prefer": prefer, "Accept": accept, "Content-Type": "application/json"}
    headers = {k: v for k, v in headers.items() if v}
    check(target.send(method, f"rpc/{function}?{query}", headers, body), f"{method} rpc/{function}?{query} {headers} {body!r}")


def test_the_fuzzing_stayed_bounded(target):
    """Runs after the properties (file order): they sent requests and stayed within the time budget."""
    elapsed = time.monotonic() - target.started
    assert elapsed < TIME_BUDGET + 20, f"the fuzz tests took {elapsed:.0f} s"


# ---------------------------------------------------------------- well-formed requests must succeed

# column → the kind of values it takes; every relation here is a real foreign key of the example schema.
SCHEMA = {
    "readings": {"columns": {"id": "uuid", "app_id": "uuid", "user_id": "uuid", "kind": "text", "content": "jsonb",
                             "created_at": "time"},
                 "relations": ["users", "reading_notes"]},
    "users": {"columns": {"id": "uuid", "app_id": "uuid", "language": "text", "timezone": "text",
                          "onboarding_completed": "bool", "created_at": "time"},
              "relations": ["readings", "devices"]},
    "devices": {"columns": {"id": "uuid", "user_id": "uuid", "created_at": "time"}, "relations": ["users"]},
    "reading_notes": {"columns": {"id": "uuid", "reading_id": "uuid", "body": "text", "created_at": "time"},
                      "relations": ["readings"]},
}
WORDS = ["face", "palm", "coffee", "UTC", "en", "x", "a b", "ü", "50%", "it's"]
VALUES = {
    "uuid": st.one_of(st.uuids().map(str)),
    "text": st.sampled_from(WORDS),
    "time": st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00", "2030-12-31", "1999-01-01 10:00"]),
    "bool": st.sampled_from(["true", "false"]),
}
OPERATORS_FOR = {"uuid": ["eq", "neq", "in", "is"], "text": ["eq", "neq", "like", "ilike", "in", "is", "match",
                                                             "imatch", "gt", "lte", "isdistinct"],
                 "time": ["eq", "gt", "gte", "lt", "lte", "neq", "in", "is"], "bool": ["eq", "is", "neq"],
                 "jsonb": ["cs", "cd", "is"]}


@st.composite
def well_formed_filter(draw, columns: dict) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(columns)))
    kind = columns[name]
    op = draw(st.sampled_from(OPERATORS_FOR[kind]))
    if op == "is":
        value = draw(st.sampled_from(["null", "not_null"] if kind != "bool" else ["true", "false", "null", "unknown"]))
        value = "null" if value == "not_null" else value
    elif kind == "jsonb":
        value = json.dumps(draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2)))
    elif op == "in":
        value = "(" + ",".join(quoted(v) for v in draw(st.lists(VALUES[kind], max_size=4))) + ")"
    elif op in ("match", "imatch"):
        value = draw(st.sampled_from(["^f", "e$", "a|b", "x"]))
    else:
        value = draw(VALUES[kind])
        if op in ("like", "ilike"):
            value = draw(st.sampled_from(["*", "%"])) + value + "*"
    negate = draw(st.booleans())
    return name, ("not." if negate else "") + f"{op}.{value}"


@st.composite
def well_formed_request(draw, notes: bool) -> str:
    table = draw(st.sampled_from(["readings", "users", "devices"] + (["reading_notes"] if notes else [])))
    spec = SCHEMA[table]
    fields = draw(st.lists(st.sampled_from(sorted(spec["columns"])), min_size=1, max_size=4, unique=True))
    params = []
    relations = [r for r in spec["relations"] if notes or r != "reading_notes"]
    embedded = draw(st.lists(st.sampled_from(relations), max_size=2, unique=True)) if relations else []
    for rel in embedded:
        rel_spec = SCHEMA[rel]
        rel_fields = draw(st.lists(st.sampled_from(sorted(rel_spec["columns"])), min_size=1, max_size=3, unique=True))
        inner = draw(st.booleans())
        alias = draw(st.sampled_from(["", "x_" + rel + ":"]))
        fields.append(f"{alias}{rel}{'!inner' if inner else ''}({','.join(rel_fields)})")
        key = alias[:-1] if alias else rel
        for name, value in draw(st.lists(well_formed_filter(rel_spec["columns"]), max_size=2)):
            params.append((f"{key}.{name}", value))
        if draw(st.booleans()):
            params.append((f"{key}.order", draw(st.sampled_from(sorted(rel_spec["columns"]))) + ".desc.nullslast"))
        if draw(st.booleans()):
            params.append((f"{key}.limit", str(draw(st.integers(0, 5)))))
    params.insert(0, ("select", ",".join(fields)))
    params += draw(st.lists(well_formed_filter(spec["columns"]), max_size=3))
    if draw(st.booleans()):
        leaves = draw(st.lists(well_formed_filter(spec["columns"]), min_size=1, max_size=3))
        params.append(("or", "(" + ",".join(f"{n}.{v}" for n, v in leaves) + ")"))
    if draw(st.booleans()):
        params.append(("order", draw(st.sampled_from(sorted(spec["columns"]))) + draw(st.sampled_from(
            [".asc", ".desc", ".asc.nullsfirst", ".desc.nullslast"]))))
    params += [(k, str(draw(st.integers(0, 20)))) for k in draw(st.lists(st.sampled_from(["limit", "offset"]),
                                                                         max_size=2, unique=True))]
    return table + "?" + build_query(params, draw(encoding))


@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_well_formed_reads_succeed(target, data):
    """A request built only from real columns, real relationships and values of the right type is answered 200."""
    request = data.draw(well_formed_request(target.has_notes))
    prefer = data.draw(st.sampled_from(["", "count=exact"]))
    response = target.send("GET", request, {"Prefer": prefer} if prefer else {})
    check(response, f"GET {request}")
    if response.status_code == 416 and prefer == "count=exact":
        assert response.json()["code"] == "PGRST103"  # an offset past the counted total
        return
    assert response.status_code in (200, 206), f"GET {request} → {response.status_code} {response.text[:500]}"
