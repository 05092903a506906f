"""The table API (`/rest/v1/<table>`) through the official supabase-py client, as a signed-in anonymous guest.

`supabase.table("readings")` selects with filters, logic trees, order, limit, range and counts; single() and
maybe_single(); inserts (one, bulk with mixed keys, 1,000 rows), upserts (merge, ignore), updates and deletes; exact
numbers; full-text search and CSV; the Prefer header and what `Preference-Applied` echoes; errors in
PostgREST's four-key shape; and the limits (414, NUL, invalid UTF-8). Raw httpx where the client hides a status or a
header. Every test signs up guests of its own, so the tests run in any order. Embeddings: `test_tables_embedding.py`.
"""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from postgrest.exceptions import APIError

from conftest import HTTP_TIMEOUT, api_headers, new_device_secret
from support import bearer_headers, make_client

REST = "/rest/v1/"
ERROR_KEYS = {"code", "message", "details", "hint"}
JSON_UTF8 = "application/json; charset=utf-8"

# The reader's rows (kinds, notes in content, fixed created_at), inserted once per module by `reader`.
READER_ROWS = [
    {"kind": "face", "content": {"mood": "calm", "tags": ["a", "b"]}, "created_at": "2026-01-01T00:00:00+00:00"},
    {"kind": "palm", "content": {"lines": 3, "note": "a,b (c)"}, "created_at": "2026-01-02T00:00:00+00:00"},
    {"kind": "coffee", "content": {"lines": 3, "note": 'say "hi"'}, "created_at": "2026-01-03T00:00:00+00:00"},
    {"kind": "palm", "content": {"note": "50% off"}, "created_at": "2026-01-04T00:00:00+00:00"},
]


class Guest:
    """A signed-in anonymous guest: the official client, its access token and user id."""

    def __init__(self, server, app):
        self.server = server
        self.app = app
        self.client = make_client(server, app)
        signed_in = self.client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
        self.token = signed_in.session.access_token
        self.user_id = signed_in.user.id

    def table(self, name: str):
        return self.client.table(name)

    def headers(self, **extra: str) -> dict[str, str]:
        return bearer_headers(self.app, self.token, **extra)

    def request(self, method: str, path: str, headers=None, **kwargs) -> httpx.Response:
        """A raw request as this guest; `headers` a dict (overriding), or a list of pairs (repeated names kept)."""
        if isinstance(headers, list):
            merged = [*self.headers().items(), *headers]
        else:
            merged = self.headers(**(headers or {}))
        with httpx.Client(timeout=HTTP_TIMEOUT) as http:
            return http.request(method, self.server.url + REST + path, headers=merged, **kwargs)


def assert_table_error(response: httpx.Response, status: int, code: str, message: str | None = None,
                       details: str | None = None) -> dict:
    """The answer is PostgREST's error: `status`, a JSON object of exactly code/message/details/hint, `code` a string."""
    assert response.status_code == status, f"expected {status} {code}, got {response.status_code} {response.text[:500]}"
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body, dict) and set(body) == ERROR_KEYS, f"error keys: {body!r}"
    assert isinstance(body["code"], str) and body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    for key in ("details", "hint"):
        assert body[key] is None or isinstance(body[key], str), body
    if message is not None:
        assert body["message"] == message, body
    if details is not None:
        assert body["details"] == details, body
    return body


def ids(rows) -> list[str]:
    return [row["id"] for row in rows]


@pytest.fixture(scope="module")
def reader(server, app):
    """A guest with the four READER_ROWS (nothing else), for the read-only tests; `reader.rows` in that order."""
    guest = Guest(server, app)
    guest.rows = guest.table("readings").insert(READER_ROWS).execute().data
    assert [row["kind"] for row in guest.rows] == [row["kind"] for row in READER_ROWS]
    return guest


# ---------------------------------------------------------------- select: filters


def test_select_filters_with_the_client(reader):
    r1, r2, r3, r4 = reader.rows
    readings = lambda: reader.table("readings").select("*").order("created_at")  # noqa: E731

    assert ids(readings().eq("kind", "palm").execute().data) == ids([r2, r4])
    assert ids(readings().neq("kind", "palm").execute().data) == ids([r1, r3])
    assert ids(readings().gt("created_at", r2["created_at"]).execute().data) == ids([r3, r4])
    assert ids(readings().gte("created_at", r2["created_at"]).execute().data) == ids([r2, r3, r4])
    assert ids(readings().lt("created_at", r2["created_at"]).execute().data) == ids([r1])
    assert ids(readings().lte("created_at", "2026-01-02T00:00:00+00:00").execute().data) == ids([r1, r2]), \
        "a '+' in a timestamp is not a space"
    assert ids(readings().like("kind", "pa*").execute().data) == ids([r2, r4]), "* is %"
    assert ids(readings().like("kind", "%ffe%").execute().data) == ids([r3])
    assert ids(readings().ilike("kind", "%ALM").execute().data) == ids([r2, r4])
    assert ids(readings().ilike("kind", "FA*").execute().data) == ids([r1])
    assert readings().like("kind", "PA*").execute().data == [], "like is case-sensitive"
    assert ids(readings().is_("content->>note", "null").execute().data) == ids([r1])
    assert ids(readings().not_.is_("content->>note", "null").execute().data) == ids([r2, r3, r4])
    assert ids(readings().not_.eq("kind", "palm").execute().data) == ids([r1, r3])
    assert ids(readings().contains("content", {"lines": 3}).execute().data) == ids([r2, r3])
    assert ids(readings().contains("content", {"tags": ["a"]}).execute().data) == ids([r1])
    assert ids(readings().eq("content->>note", "50% off").execute().data) == ids([r4])


def test_full_text_search_and_a_query_it_cannot_parse(reader):
    r1, r2, r3, r4 = reader.rows
    readings = lambda: reader.table("readings").select("id").order("created_at")  # noqa: E731
    assert ids(readings().text_search("kind", "palm | face").execute().data) == ids([r1, r2, r4])
    assert ids(readings().text_search("kind", "coff:*", options={"config": "english"}).execute().data) == ids([r3])
    assert ids(readings().text_search("kind", "palm or coffee", options={"type": "web_search"}).execute().data) == ids([r2, r3, r4])
    assert ids(readings().text_search("kind", "calm face", options={"type": "plain"}).execute().data) == []
    either = reader.request("GET", "readings", params={"select": "id", "or": "(kind.fts.coffee,kind.fts.face)", "order": "created_at"})
    assert ids(either.json()) == ids([r1, r3]), either.text
    # to_tsquery's own syntax refuses these: PostgREST's parse error with PostgreSQL's complaint, never a SQL error.
    for query in ["a & (", ":", "palm !", "(("]:
        for params in [{"kind": f"fts.{query}"}, {"kind": f"fts(english).{query}"}, {"or": f"(kind.fts.{query},kind.eq.palm)"}]:
            body = assert_table_error(reader.request("GET", "readings", params=params), 400, "PGRST100")
            assert "in tsquery" in (body["details"] or ""), body


def test_csv_is_postgrest_text(reader):
    raw = reader.request("GET", "readings", {"Accept": "text/csv"},
                         params={"select": "kind,n:content->lines,note:content->>note", "order": "created_at"})
    assert raw.status_code == 200 and raw.headers["content-type"] == "text/csv; charset=utf-8", raw.text
    assert raw.text == 'kind,n,note\nface,,\npalm,3,"a,b (c)"\ncoffee,3,"say ""hi"""\npalm,,"50% off"'
    through_client = reader.table("readings").select("kind").order("created_at").limit(2).csv().execute()
    assert through_client.data == "kind\nface\npalm"
    none = reader.request("GET", "readings", {"Accept": "text/csv"}, params={"kind": "eq.tarot"})
    assert none.status_code == 200 and none.text == "\n", "no row: no header either, as in PostgREST"
    head = reader.request("HEAD", "readings", {"Accept": "text/csv", "Prefer": "count=exact"})
    assert head.status_code == 200 and head.content == b"" and head.headers["content-range"] == "0-3/4"


def test_csv_after_a_write(server, app):
    guest = Guest(server, app)
    raw = guest.request("POST", "readings?select=kind,created_at", {"Accept": "text/csv", "Prefer": "return=representation"},
                        json=[{"kind": "face", "created_at": "2026-05-01T10:00:00+00:00"}])
    assert raw.status_code == 201 and raw.headers["content-type"] == "text/csv; charset=utf-8", raw.text
    assert raw.text == 'kind,created_at\nface,"2026-05-01 10:00:00+00"', raw.text


def test_a_csv_body_inserts_rows_under_the_callers_policies(server, app):
    """`Content-Type: text/csv` as PostgREST reads it: a header of column names, a row a line, quoted fields, NULL."""
    guest = Guest(server, app)
    body = 'kind,created_at\r\npalm,"2026-05-01 10:00:00+00"\r\n"coffee",2026-05-02T00:00:00Z\r\n'
    raw = guest.request("POST", "readings?select=kind,created_at", {"Content-Type": "text/csv", "Prefer": "return=representation"},
                        content=body.encode())
    assert raw.status_code == 201, raw.text
    assert raw.json() == [{"kind": "palm", "created_at": "2026-05-01T10:00:00+00:00"},
                          {"kind": "coffee", "created_at": "2026-05-02T00:00:00+00:00"}]
    null = guest.request("POST", "readings", {"Content-Type": "text/csv"}, content=b"kind,created_at\nface,NULL")
    assert_table_error(null, 400, "23502")  # NULL is SQL NULL (the text "NULL" would be 22007, not a timestamp)
    assert {row["user_id"] for row in guest.table("readings").select("user_id").execute().data} == {guest.user_id}
    for malformed, message in (("kind,content\nface", "All lines must have same number of fields"),
                               ('kind\n"face', "A quoted CSV field is not closed")):
        refused = guest.request("POST", "readings", {"Content-Type": "text/csv"}, content=malformed.encode())
        assert_table_error(refused, 400, "PGRST102", message=message)
    refused = guest.request("POST", "readings", {"Content-Type": "text/csv"}, content=b"kind,user_id\nface," + str(uuid.uuid4()).encode())
    assert_table_error(refused, 403, "42501")
    assert len(guest.table("readings").select("id").execute().data) == 2, "refused bodies wrote nothing"


def test_in_with_commas_and_quotes(reader):
    r1, r2, r3, r4 = reader.rows
    selected = reader.table("readings").select("id").in_("content->>note", ["a,b (c)", 'say "hi"']).order("created_at")
    assert ids(selected.execute().data) == ids([r2, r3])
    # Raw, as supabase-swift quotes: each item in double quotes, an inner quote backslash-escaped.
    raw = reader.request("GET", 'readings', params={"select": "id", "order": "created_at",
                                                    "content->>note": 'in.("a,b (c)","say \\"hi\\"","nothing")'})
    assert raw.status_code == 200, raw.text
    assert ids(raw.json()) == ids([r2, r3])
    assert reader.request("GET", "readings", params={"kind": "in.()"}).json() == [], "an empty list matches nothing"
    assert ids(reader.table("readings").select("id").not_.in_("kind", ["palm", "face"]).execute().data) == ids([r3])


def test_or_trees_with_nested_and(reader):
    r1, r2, r3, r4 = reader.rows
    readings = lambda: reader.table("readings").select("id").order("created_at")  # noqa: E731
    tree = readings().or_("kind.eq.face,and(kind.eq.palm,created_at.gt.2026-01-03T00:00:00+00:00)")
    assert ids(tree.execute().data) == ids([r1, r4])
    nested = readings().or_("and(kind.eq.coffee,content->>lines.eq.3),not.and(kind.neq.face,kind.neq.palm)")
    assert ids(nested.execute().data) == ids([r1, r2, r3, r4])
    quoted = readings().or_('content->>note.eq."a,b (c)",content->>note.eq."50% off"')
    assert ids(quoted.execute().data) == ids([r2, r4])
    # A top-level and=, and not.or= (raw).
    raw = reader.request("GET", "readings", params={"select": "id", "order": "created_at",
                                                    "and": "(kind.eq.palm,content->>note.like.*off)"})
    assert ids(raw.json()) == ids([r4])
    raw = reader.request("GET", "readings", params={"select": "id", "order": "created_at",
                                                    "not.or": "(kind.eq.palm,kind.eq.face)"})
    assert ids(raw.json()) == ids([r3])


def test_order_with_nulls_first_and_last(reader):
    r1, r2, r3, r4 = reader.rows
    readings = lambda: reader.table("readings").select("id")  # noqa: E731
    assert ids(readings().order("created_at", desc=True).execute().data) == ids([r4, r3, r2, r1])
    assert ids(readings().order("content->>note", nullsfirst=True).execute().data) == ids([r1, r4, r2, r3])
    assert ids(readings().order("content->>note", nullsfirst=False).execute().data) == ids([r4, r2, r3, r1])
    assert ids(readings().order("content->>note", desc=True, nullsfirst=False).execute().data) == ids([r3, r2, r4, r1])
    assert ids(readings().order("content->>note", desc=True).execute().data)[0] == r1["id"], \
        "PostgreSQL's default for desc is nulls first"
    two_keys = readings().order("kind").order("created_at", desc=True).execute().data
    assert ids(two_keys) == ids([r3, r1, r4, r2])


def test_limit_range_and_counts(reader):
    r1, r2, r3, r4 = reader.rows
    readings = reader.table("readings")
    assert ids(readings.select("id").order("created_at").limit(2).execute().data) == ids([r1, r2])
    page = readings.select("id").order("created_at").range(1, 2).execute()
    assert ids(page.data) == ids([r2, r3]) and page.count is None

    raw = reader.request("GET", "readings?select=id&order=created_at&offset=0&limit=2")
    assert raw.status_code == 200 and raw.headers["content-range"] == "0-1/*"
    assert raw.headers["content-type"] == JSON_UTF8

    counted = readings.select("id", count="exact").order("created_at").range(0, 1).execute()
    assert counted.count == 4 and ids(counted.data) == ids([r1, r2])
    raw = reader.request("GET", "readings?select=id&order=created_at&offset=0&limit=2", {"Prefer": "count=exact"})
    assert raw.status_code == 206, "a partial page with a known total"
    assert raw.headers["content-range"] == "0-1/4"
    raw = reader.request("GET", "readings?select=id&offset=2&limit=2", {"Prefer": "count=exact"})
    assert raw.status_code == 206 and raw.headers["content-range"] == "2-3/4", "any page smaller than the total"
    raw = reader.request("GET", "readings?select=id&offset=4", {"Prefer": "count=exact"})
    assert raw.status_code == 206 and raw.headers["content-range"] == "*/4" and raw.json() == [], \
        "an offset equal to the total is an empty page, not a 416 (PostgREST: only offset > total)"
    raw = reader.request("GET", "readings?select=id", {"Prefer": "count=exact"})
    assert raw.status_code == 200 and raw.headers["content-range"] == "0-3/4"
    raw = reader.request("GET", "readings?select=id&kind=eq.nothing", {"Prefer": "count=exact"})
    assert raw.status_code == 200 and raw.headers["content-range"] == "*/0" and raw.json() == []
    raw = reader.request("GET", "readings?select=id&limit=0")
    assert raw.status_code == 200 and raw.json() == []

    head = readings.select("*", count="exact", head=True).eq("kind", "palm").execute()
    assert head.count == 2 and head.data in ([], None, "")
    raw = reader.request("HEAD", "readings?kind=eq.palm", {"Prefer": "count=exact"})
    assert raw.status_code == 200 and raw.content == b"" and raw.headers["content-range"] == "0-1/2"

    with pytest.raises(APIError) as raised:
        readings.select("id", count="exact").range(10, 11).execute()
    assert raised.value.code == "PGRST103"
    raw = reader.request("GET", "readings?offset=10&limit=2", {"Prefer": "count=exact"})
    assert_table_error(raw, 416, "PGRST103", details="An offset of 10 was requested, but there are only 4 rows.")


def test_single_and_maybe_single(reader):
    r1, r2, r3, r4 = reader.rows
    readings = reader.table("readings")
    one = readings.select("*").eq("id", r1["id"]).single().execute()
    assert isinstance(one.data, dict) and one.data == r1

    for kind, count in (("nothing", 0), ("palm", 2)):
        with pytest.raises(APIError) as raised:
            readings.select("*").eq("kind", kind).single().execute()
        assert raised.value.code == "PGRST116"
        assert raised.value.details == f"The result contains {count} rows"
        raw = reader.request("GET", f"readings?kind=eq.{kind}", {"Accept": "application/vnd.pgrst.object+json"})
        assert_table_error(raw, 406, "PGRST116", message="Cannot coerce the result to a single JSON object",
                           details=f"The result contains {count} rows")

    raw = reader.request("GET", f"readings?id=eq.{r2['id']}", {"Accept": "application/vnd.pgrst.object+json"})
    assert raw.status_code == 200 and raw.json() == r2
    assert raw.headers["content-type"].startswith("application/vnd.pgrst.object+json")
    assert raw.headers["content-range"] == "0-0/*"

    assert readings.select("*").eq("kind", "nothing").maybe_single().execute() is None
    assert readings.select("*").eq("id", r3["id"]).maybe_single().execute().data == r3


# ---------------------------------------------------------------- insert, upsert, update, delete


def test_insert_returns_the_row_with_server_defaults(server, app):
    guest = Guest(server, app)
    row = guest.table("readings").insert({"kind": "palm", "content": {"lines": 3}}).execute().data
    assert isinstance(row, list) and len(row) == 1
    row = row[0]
    assert set(row) == {"id", "app_id", "user_id", "kind", "content", "created_at"}
    assert uuid.UUID(row["id"]) and row["user_id"] == guest.user_id and row["app_id"] == app.app_id
    assert row["kind"] == "palm" and row["content"] == {"lines": 3}

    raw = guest.request("POST", "readings", {"Prefer": "return=representation"}, json={"kind": "face"})
    assert raw.status_code == 201 and raw.headers["content-type"] == JSON_UTF8
    assert raw.json()[0]["content"] == {}, "the column default"
    raw = guest.request("POST", "readings", json={"kind": "face"})
    assert raw.status_code == 201 and raw.content == b"", "minimal by default"

    shaped = guest.table("readings").insert({"kind": "coffee"}, returning="minimal").select("id, kind").execute().data
    assert len(shaped) == 1 and set(shaped[0]) == {"id", "kind"} and shaped[0]["kind"] == "coffee"
    single = guest.table("readings").insert({"kind": "coffee"}).select("kind").single().execute()
    assert single.data == {"kind": "coffee"}


def test_bulk_insert_with_mixed_keys(server, app):
    guest = Guest(server, app)
    rows = [{"kind": "face"}, {"kind": "palm", "content": {"x": 1}}]
    with pytest.raises(APIError) as raised:
        guest.table("readings").insert(rows).execute()  # columns=kind,content: the first row's content is null
    assert raised.value.code == "23502"
    assert guest.table("readings").select("id").execute().data == [], "nothing of the refused bulk insert stays"

    inserted = guest.table("readings").insert(rows, default_to_null=False).execute().data
    assert [(row["kind"], row["content"]) for row in inserted] == [("face", {}), ("palm", {"x": 1})]

    # columns= names exactly the columns; keys outside it are ignored.
    raw = guest.request("POST", 'readings?columns="kind"', {"Prefer": "return=representation"},
                        json=[{"kind": "coffee", "content": {"ignored": True}}])
    assert raw.status_code == 201 and raw.json()[0]["content"] == {}
    # Without columns= every object must have the same keys.
    raw = guest.request("POST", "readings", json=rows)
    assert_table_error(raw, 400, "PGRST102")
    raw = guest.request("POST", "readings", json={"kind": "face", "nope": 1})
    body = assert_table_error(raw, 400, "PGRST204")
    assert "'nope'" in body["message"]


def test_a_bulk_insert_of_a_thousand_rows(server, app):
    guest = Guest(server, app)
    rows = [{"kind": ("face", "palm", "coffee")[i % 3], "content": {"i": i}} for i in range(1000)]
    response = guest.table("readings").insert(rows, returning="minimal", count="exact").execute()
    assert response.count == 1000
    counted = guest.table("readings").select("*", count="exact", head=True).execute()
    assert counted.count == 1000
    page = guest.table("readings").select("content").eq("content->>i", "999").execute().data
    assert page == [{"content": {"i": 999}}]


def test_upsert_merge_and_ignore(server, app):
    guest = Guest(server, app)
    original = guest.table("readings").insert({"kind": "palm", "content": {"v": 1}}).execute().data[0]
    rid = original["id"]

    merged = guest.table("readings").upsert({"id": rid, "kind": "face", "content": {"v": 2}}, on_conflict="id")
    merged = merged.execute().data
    assert len(merged) == 1 and merged[0]["id"] == rid and merged[0]["kind"] == "face"
    assert merged[0]["content"] == {"v": 2} and merged[0]["created_at"] == original["created_at"]

    raw = guest.request("POST", "readings?on_conflict=id",
                        {"Prefer": "resolution=merge-duplicates,return=representation"},
                        json={"id": rid, "kind": "coffee", "content": {"v": 3}})
    assert raw.status_code == 200, "a merge that inserted nothing is 200"
    assert raw.headers["preference-applied"] == "resolution=merge-duplicates, return=representation"
    assert raw.json()[0]["content"] == {"v": 3}

    new_id = str(uuid.uuid4())
    raw = guest.request("POST", "readings?on_conflict=id&columns=id,kind",
                        {"Prefer": "resolution=merge-duplicates,return=representation"},
                        json=[{"id": rid, "kind": "palm"}, {"id": new_id, "kind": "face"}])
    assert raw.status_code == 201, "one row was new"
    assert sorted(row["id"] for row in raw.json()) == sorted([rid, new_id])

    ignored = guest.table("readings").upsert({"id": rid, "kind": "coffee", "content": {"v": 9}},
                                             ignore_duplicates=True, on_conflict="id").execute()
    assert ignored.data == [], "an ignored duplicate is not returned"
    raw = guest.request("POST", "readings?on_conflict=id",
                        {"Prefer": "resolution=ignore-duplicates,return=representation"},
                        json={"id": rid, "kind": "coffee", "content": {"v": 9}})
    assert raw.status_code == 201 and raw.json() == []
    kept = guest.table("readings").select("kind, content").eq("id", rid).single().execute().data
    assert kept == {"kind": "palm", "content": {"v": 3}}, "the old row is kept"


def test_update_and_delete(server, app):
    guest = Guest(server, app)
    a, b, c = guest.table("readings").insert(
        [{"kind": "palm", "content": {"n": 1}}, {"kind": "palm", "content": {"n": 2}}, {"kind": "face", "content": {}}]
    ).execute().data

    changed = guest.table("readings").update({"content": {"n": 10}}).eq("kind", "palm").execute().data
    assert sorted(ids(changed)) == sorted([a["id"], b["id"]]) and all(r["content"] == {"n": 10} for r in changed)
    assert guest.table("readings").update({"kind": "face"}).eq("kind", "nothing").execute().data == []

    raw = guest.request("PATCH", f"readings?id=eq.{c['id']}", {"Prefer": "return=minimal"}, json={"kind": "coffee"})
    assert raw.status_code == 204 and raw.content == b""
    raw = guest.request("PATCH", f"readings?id=eq.{c['id']}", {"Prefer": "return=representation"},
                        json={"content": {"z": True}})
    assert raw.status_code == 200 and raw.json()[0]["kind"] == "coffee" and raw.json()[0]["content"] == {"z": True}

    deleted = guest.table("readings").delete().eq("id", a["id"]).execute().data
    assert ids(deleted) == [a["id"]]
    assert guest.table("readings").select("id").eq("id", a["id"]).execute().data == []
    raw = guest.request("DELETE", f"readings?id=eq.{b['id']}")
    assert raw.status_code == 204 and raw.content == b""
    raw = guest.request("DELETE", f"readings?id=eq.{b['id']}", {"Prefer": "return=representation"})
    assert raw.status_code == 200 and raw.json() == [], "no match is not a 404"
    assert ids(guest.table("readings").select("id").execute().data) == [c["id"]]


def test_update_and_delete_need_a_filter(server, app):
    guest = Guest(server, app)
    row = guest.table("readings").insert({"kind": "palm"}).execute().data[0]
    with pytest.raises(APIError) as raised:
        guest.table("readings").update({"kind": "face"}).execute()
    assert raised.value.code == "21000" and raised.value.message == "UPDATE requires a WHERE clause"
    with pytest.raises(APIError) as raised:
        guest.table("readings").delete().execute()
    assert raised.value.code == "21000" and raised.value.message == "DELETE requires a WHERE clause"
    assert_table_error(guest.request("PATCH", "readings", json={"kind": "face"}), 400, "21000",
                       message="UPDATE requires a WHERE clause")
    assert_table_error(guest.request("DELETE", "readings"), 400, "21000", message="DELETE requires a WHERE clause")
    # A limit or an order is not a filter.
    assert_table_error(guest.request("DELETE", "readings?limit=1"), 400, "21000")

    raw = guest.request("PATCH", f"readings?id=eq.{row['id']}", json={})
    assert raw.status_code == 204 and raw.content == b""
    assert guest.table("readings").select("*").execute().data == [row], "nothing changed"


def test_numbers_keep_every_digit(server, app):
    guest = Guest(server, app)
    body = '{"kind":"palm","content":{"n":9007199254740993,"d":123456789012345678901234567890.000000000000000001}}'
    raw = guest.request("POST", "readings?select=content", {"Prefer": "return=representation",
                                                             "Content-Type": "application/json"}, content=body)
    assert raw.status_code == 201, raw.text
    assert "9007199254740993" in raw.text and "123456789012345678901234567890.000000000000000001" in raw.text
    read = guest.request("GET", "readings?select=content&content->>n=eq.9007199254740993")
    assert read.status_code == 200 and len(read.json()) == 1
    assert re.search(r'"n":\s*9007199254740993\b', read.text), read.text
    assert guest.table("readings").select("content").execute().data[0]["content"]["n"] == 9007199254740993


# ---------------------------------------------------------------- Prefer


def test_preference_applied_echoes_what_was_honoured(server, app):
    guest = Guest(server, app)
    raw = guest.request("POST", "readings",
                        {"Prefer": "count=exact, return=representation, missing=default, resolution=merge-duplicates"},
                        json=[{"kind": "palm"}])
    assert raw.status_code == 201, raw.text
    assert raw.headers["preference-applied"] == \
        "resolution=merge-duplicates, missing=default, return=representation, count=exact"
    assert raw.headers["content-range"] == "*/1"
    # Several Prefer headers, and the first value of a category wins.
    raw = guest.request("GET", "readings", [("Prefer", "count=exact"), ("Prefer", "count=planned, foo=bar")])
    assert raw.status_code == 200 and raw.headers["preference-applied"] == "count=exact"
    raw = guest.request("GET", "readings", {"Prefer": "unknown=1, return=representation"})
    assert raw.status_code == 200, "unknown preferences are ignored under lenient handling"
    assert "preference-applied" not in raw.headers, "nothing applied: return= is not echoed on a read"


def test_prefer_timezone_writes_timestamps_in_that_zone(server, app):
    guest = Guest(server, app)
    guest.table("readings").insert({"kind": "face", "created_at": "2026-05-01T10:00:00+00:00"}).execute()
    zoned = guest.request("GET", "readings?select=created_at", {"Prefer": "timezone=America/Los_Angeles, count=exact"})
    assert zoned.status_code == 200 and zoned.json() == [{"created_at": "2026-05-01T03:00:00-07:00"}], zoned.text
    assert zoned.headers["preference-applied"] == "count=exact, timezone=America/Los_Angeles"
    assert guest.request("GET", "readings?select=created_at").json() == [{"created_at": "2026-05-01T10:00:00+00:00"}], \
        "the zone holds for its own request only"
    assert_table_error(guest.request("GET", "readings", {"Prefer": "timezone=Nowhere/Else"}), 400, "22023")


def test_strict_handling_and_refused_preferences(server, app):
    guest = Guest(server, app)
    body = assert_table_error(guest.request("GET", "readings", {"Prefer": "handling=strict, foo=bar"}), 400,
                              "PGRST122", message="Invalid preferences given with handling=strict")
    assert "foo=bar" in body["details"]
    raw = guest.request("POST", "readings", {"Prefer": "tx=rollback, return=representation"}, json={"kind": "face"})
    assert_table_error(raw, 400, "PGRST122")
    assert guest.table("readings").select("id").execute().data == [], "a refused request wrote nothing"
    committed = guest.request("POST", "readings", {"Prefer": "tx=commit, return=representation"}, json={"kind": "face"})
    assert committed.status_code == 201 and committed.headers["preference-applied"] == "return=representation, tx=commit"
    assert [row["id"] for row in guest.table("readings").select("id").execute().data] == [committed.json()[0]["id"]], \
        "tx=commit is what every request does"
    raw = guest.request("GET", "readings", {"Prefer": "handling=strict, count=exact"})
    assert raw.status_code == 200 and raw.headers["preference-applied"] == "count=exact, handling=strict"


def test_return_headers_only_gives_a_location(server, app):
    guest = Guest(server, app)
    raw = guest.request("POST", "readings", {"Prefer": "return=headers-only"}, json={"kind": "coffee"})
    assert raw.status_code == 201 and raw.content == b""
    location = raw.headers["location"]
    match = re.fullmatch(r"/readings\?id=eq\.([0-9a-f-]{36})", location)
    assert match, location
    assert guest.table("readings").select("kind").eq("id", match.group(1)).execute().data == [{"kind": "coffee"}]


def test_max_affected_with_strict_handling_rolls_back(server, app):
    guest = Guest(server, app)
    rows = guest.table("readings").insert([{"kind": "palm"}, {"kind": "palm"}]).execute().data
    raw = guest.request("DELETE", "readings?kind=eq.palm", {"Prefer": "handling=strict, max-affected=1"})
    assert_table_error(raw, 400, "PGRST124")
    assert sorted(ids(guest.table("readings").select("id").execute().data)) == sorted(ids(rows)), "both rows stay"
    raw = guest.request("PATCH", "readings?kind=eq.palm", {"Prefer": "handling=strict, max-affected=1"},
                        json={"kind": "face"})
    assert_table_error(raw, 400, "PGRST124")
    assert {r["kind"] for r in guest.table("readings").select("kind").execute().data} == {"palm"}
    raw = guest.request("DELETE", f"readings?id=eq.{rows[0]['id']}", {"Prefer": "handling=strict, max-affected=1"})
    assert raw.status_code == 204
    assert raw.headers.get("preference-applied") == "handling=strict, max-affected=1"
    # A singular refusal rolls a write back too.
    raw = guest.request("PATCH", "readings?kind=eq.nothing", {"Accept": "application/vnd.pgrst.object+json",
                                                               "Prefer": "return=representation"}, json={"kind": "face"})
    assert_table_error(raw, 406, "PGRST116", details="The result contains 0 rows")
    raw = guest.request("POST", "readings", {"Accept": "application/vnd.pgrst.object+json",
                                             "Prefer": "return=representation"},
                        json=[{"kind": "face"}, {"kind": "face"}])
    assert_table_error(raw, 406, "PGRST116", details="The result contains 2 rows")
    assert len(guest.table("readings").select("id").execute().data) == 1, "the refused insert was rolled back"


# ---------------------------------------------------------------- errors


def test_errors_have_postgrests_codes_and_shape(server, app):
    guest = Guest(server, app)
    body = assert_table_error(guest.request("GET", "no_such_table"), 404, "PGRST205")
    assert body["message"] == "Could not find the table 'public.no_such_table' in the schema cache"
    assert_table_error(guest.request("GET", "readings?select=id,banana"), 400, "42703")
    assert_table_error(guest.request("GET", "readings?banana=eq.1"), 400, "42703")
    assert_table_error(guest.request("GET", "readings?order=banana"), 400, "42703")
    assert_table_error(guest.request("TRACE", "readings"), 405, "PGRST117")
    body = assert_table_error(guest.request("GET", "readings", {"Accept-Profile": "nope"}), 406, "PGRST106")
    assert "public" in body["hint"] and body["hint"].startswith("Only the following schemas are exposed")
    assert_table_error(guest.request("POST", "readings", {"Content-Profile": "nope"}, json={"kind": "face"}),
                       406, "PGRST106")
    assert_table_error(guest.request("GET", "readings", {"Accept": "application/geo+json"}), 406, "PGRST107")
    assert_table_error(guest.request("GET", "readings?kind=zz.palm"), 400, "PGRST100")
    assert_table_error(guest.request("GET", "readings?select=kind,,"), 400, "PGRST100")
    assert_table_error(guest.request("GET", "readings?or=(kind.eq.palm"), 400, "PGRST100")
    assert_table_error(guest.request("GET", "readings?order=kind.sideways"), 400, "PGRST100")
    for aggregate in ["count()", "total:count()::int", "kind,content->lines.sum()", "id,reading_notes(id.count())"]:
        assert_table_error(guest.request("GET", "readings", params={"select": aggregate}), 400, "PGRST123",
                           message="Use of aggregate functions is not allowed")
    assert_table_error(guest.request("POST", "readings?select=count()", {"Prefer": "return=representation"},
                                     json={"kind": "face"}), 400, "PGRST123")
    assert guest.table("readings").select("id").eq("kind", "face").execute().data == [], "the refused write wrote nothing"
    assert_table_error(guest.request("GET", "readings?limit=-1"), 416, "PGRST103",
                       details="Limit should be greater than or equal to zero.")
    assert_table_error(guest.request("GET", "readings?id=eq.not-a-uuid"), 400, "22P02")
    assert_table_error(guest.request("POST", "readings", json={"kind": "tarot"}), 400, "23514")
    assert_table_error(guest.request("POST", "readings", {"Content-Type": "application/json"}, content=b"{nope"),
                       400, "PGRST102")
    assert_table_error(guest.request("POST", "readings", {"Content-Type": "text/plain"}, content=b"kind"),
                       400, "PGRST102")
    row = guest.table("readings").insert({"kind": "face"}).execute().data[0]
    assert_table_error(guest.request("POST", "readings", json={"id": row["id"], "kind": "face"}), 409, "23505")

    # The client surfaces the same codes.
    with pytest.raises(APIError) as raised:
        guest.table("no_such_table").select("*").execute()
    assert raised.value.code == "PGRST205"
    with pytest.raises(APIError) as raised:
        guest.table("readings").select("banana").execute()
    assert raised.value.code == "42703"


def test_anon_without_a_token(server, app, http):
    """The publishable key alone is the anon role: it may read nothing of readings and gets 401 on a write."""
    response = http.get(server.url + REST + "readings", headers=api_headers(app))
    assert_table_error(response, 401, "42501")  # anon holds no grant on readings
    assert response.headers.get("www-authenticate", "").startswith("Bearer")
    response = http.post(server.url + REST + "readings", headers=api_headers(app), json={"kind": "face"})
    assert_table_error(response, 401, "42501")
    assert response.headers.get("www-authenticate", "").startswith("Bearer")


# ---------------------------------------------------------------- limits


def test_a_url_over_16_kib_is_414(server, app):
    guest = Guest(server, app)
    many = ",".join(str(uuid.UUID(int=i)) for i in range(600))  # about 22 KiB
    response = guest.request("GET", f"readings?id=in.({many})")
    assert response.status_code == 414, response.text[:300]
    fits = ",".join(str(uuid.UUID(int=i)) for i in range(300))  # about 11 KiB
    response = guest.request("GET", f"readings?id=in.({fits})")
    assert response.status_code == 200 and response.json() == []


@pytest.mark.parametrize("path", [
    "read%00ings", "readings?kind=eq.pa%00lm", "readings?ki%00nd=eq.palm", "readings?select=id%00",
    "readings?or=(kind.eq.%00)", "readings?order=kind%00",
])
def test_nul_is_refused_with_400(server, app, path):
    guest = Guest(server, app)
    response = guest.request("GET", path)
    assert response.status_code == 400, f"{path}: {response.status_code} {response.text[:300]}"
    body = response.json()
    assert set(body) == ERROR_KEYS and isinstance(body["code"], str)
    write = guest.request("POST", path.replace("?", "?columns=kind&", 1) if "?" in path else path, json={"kind": "face"})
    assert write.status_code == 400 and set(write.json()) == ERROR_KEYS, f"{path}: {write.status_code} {write.text[:300]}"
    assert guest.table("readings").select("id").execute().data == [], "nothing was written"


def test_nul_in_a_body_is_refused_with_400(server, app):
    guest = Guest(server, app)
    for body in ('{"kind":"fa\\u0000ce"}', '{"kind":"face","content":{"k\\u0000":"v"}}', '{"kind":"face"}\x00'):
        response = guest.request("POST", "readings", {"Content-Type": "application/json"}, content=body.encode())
        assert response.status_code == 400, f"{body!r}: {response.status_code} {response.text[:300]}"
        assert set(response.json()) == ERROR_KEYS
    assert guest.table("readings").select("id").execute().data == []


@pytest.mark.parametrize("path", ["read%FFings", "readings?kind=eq.%FF", "readings?%C3%28=eq.1", "readings?select=%FE"])
def test_invalid_utf8_is_refused_with_400(server, app, path):
    guest = Guest(server, app)
    response = guest.request("GET", path)
    assert response.status_code == 400, f"{path}: {response.status_code} {response.text[:300]}"
    assert set(response.json()) == ERROR_KEYS
