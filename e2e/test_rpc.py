"""Issue 4, must show 4: the official `supabase` Python client's `rpc()` against the example functions."""

from __future__ import annotations

import httpx
import pytest
from postgrest.exceptions import APIError
from supabase import ClientOptions, create_client

from conftest import new_device_secret, psql


def signed_in_client(server, app):
    client = create_client(server.url, app.publishable_key, ClientOptions(auto_refresh_token=False, persist_session=False))
    client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
    return client


SECOND_SCHEMA = "rpc_second"
SECOND_SQL = f"""
set check_function_bodies = off;  -- the bodies name their tables unqualified, as a second schema's functions may
create schema if not exists {SECOND_SCHEMA};
create table if not exists {SECOND_SCHEMA}.notes (id integer primary key, body text not null);
insert into {SECOND_SCHEMA}.notes values (1, 'first'), (2, 'second') on conflict do nothing;
create or replace function {SECOND_SCHEMA}.note_count() returns bigint language sql stable as $$ select count(*) from notes $$;
create or replace function {SECOND_SCHEMA}.my_reading_count() returns bigint language sql stable
    as $$ select count(*) from readings $$;
grant usage on schema {SECOND_SCHEMA} to anon, authenticated;
grant select on {SECOND_SCHEMA}.notes to anon, authenticated;
grant execute on all functions in schema {SECOND_SCHEMA} to anon, authenticated;
"""


def test_rpc_of_a_second_schema_finds_tables_by_the_request_search_path(start_server, database, app):
    """Issue 35 group 11: a function of a second exposed schema that names its tables unqualified runs with the
    request's schema first in `search_path`, then GUESTPASS_DB_EXTRA_SEARCH_PATH (`public`), as PostgREST runs it."""
    psql(database.super_url, SECOND_SQL)
    srv = start_server(
        "rpc-second-schema", GUESTPASS_SIGNUP_BURST="1000", GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
        GUESTPASS_DB_SCHEMAS=f"public,{SECOND_SCHEMA}",
    )
    client = signed_in_client(srv, app)
    second = client.schema(SECOND_SCHEMA)
    assert second.rpc("note_count", {}).execute().data == 2
    assert second.table("notes").select("body").order("id").execute().data == [{"body": "first"}, {"body": "second"}]
    client.rpc("add_reading", {"p_kind": "palm", "p_content": {}}).execute()
    assert second.rpc("my_reading_count", {}).execute().data == 1, "public follows the request's schema"


def test_rpc_result_shapes(server, app):
    client = signed_in_client(server, app)
    added = client.rpc("add_reading", {"p_kind": "palm", "p_content": {"lines": 3}}).execute().data
    assert isinstance(added, dict), "composite → object"
    assert added["kind"] == "palm" and added["content"] == {"lines": 3}

    listed = client.rpc("list_readings", {}).execute().data
    assert isinstance(listed, list) and [row["id"] for row in listed] == [added["id"]], "setof → array"

    count = client.rpc("count_readings", {}).execute().data
    assert count == 1, "scalar → bare JSON"

    summary = client.rpc("readings_summary", {}).execute().data
    assert summary["total"] == 1, "jsonb → as is"

    deleted = client.rpc("delete_reading", {"p_id": added["id"]}).execute()
    assert deleted.data in (None, "", [], {}), "void → 204"
    assert client.rpc("count_readings", {}).execute().data == 0


def test_rpc_error_shape(server, app):
    client = signed_in_client(server, app)
    with pytest.raises(APIError) as raised:
        client.rpc("fail_with", {"p_kind": "custom"}).execute()
    error = raised.value
    assert error.code == "PT402"
    assert error.message == "custom failure"
    assert error.details == "d"
    assert error.hint == "h"


def test_rpc_tenants_are_isolated(server, app):
    first = signed_in_client(server, app)
    second = signed_in_client(server, app)
    first.rpc("add_reading", {"p_kind": "face"}).execute()
    assert second.rpc("list_readings", {}).execute().data == []
    other_id = second.auth.get_user().user.id
    with pytest.raises(APIError) as raised:
        first.rpc("get_user_readings", {"p_user_id": other_id}).execute()
    assert raised.value.code == "42501"


def test_rpc_numbers_keep_their_digits(server, app):
    """Python's ints are exact: 2^53 + 1 reaches PostgreSQL and comes back unrounded (a Double would make it 2^53)."""
    client = signed_in_client(server, app)
    assert client.rpc("echo_bigint", {"p": 9007199254740993}).execute().data == 9007199254740993
    assert client.rpc("echo_numeric", {"p": 10**39 + 1}).execute().data == 10**39 + 1


def test_rpc_rows_take_the_table_grammar(server, app):
    """`rpc(...)` returns a filter builder in every SDK: select, filters, order, range, single and count shape the
    function's rows as PostgREST shapes them, and embeddings follow the foreign keys of the table it returns."""
    client = signed_in_client(server, app)
    client.table("readings").insert([{"kind": kind, "content": {"k": kind}} for kind in ["palm", "face", "coffee", "palm"]]).execute()

    palms = client.rpc("list_readings", {}).select("kind, content->>k").eq("kind", "palm").execute().data
    assert palms == [{"kind": "palm", "k": "palm"}, {"kind": "palm", "k": "palm"}]
    ordered = client.rpc("list_readings", {}).select("kind").order("kind").limit(2).execute().data
    assert ordered == [{"kind": "coffee"}, {"kind": "face"}]
    with_argument = client.rpc("list_readings", {"p_kind": "face"}).select("kind").execute().data
    assert with_argument == [{"kind": "face"}]
    one = client.rpc("list_readings", {}).select("kind").eq("kind", "coffee").single().execute().data
    assert one == {"kind": "coffee"}, "single() is an object"
    with pytest.raises(APIError) as raised:
        client.rpc("list_readings", {}).select("kind").eq("kind", "palm").single().execute()
    assert raised.value.code == "PGRST116"
    counted = client.rpc("list_readings", {}, count="exact").select("kind").in_("kind", ["palm", "face"]).limit(1).execute()
    assert counted.count == 3 and len(counted.data) == 1
    head = client.rpc("list_readings", {"p_kind": "palm"}, head=True, count="exact").execute()
    assert head.count == 2 and not head.data, "HEAD: the count, no rows"
    embedded = client.rpc("list_readings", {}).select("kind, users(id)").eq("kind", "face").execute().data
    assert embedded == [{"kind": "face", "users": {"id": client.auth.get_user().user.id}}], "the table's foreign keys embed"
    devices = client.rpc("list_devices", {}).select("current:is_current").eq("is_current", True).execute().data
    assert devices == [{"current": True}], "RETURNS TABLE: its columns are the rows' columns"
    csv = client.rpc("list_readings", {"p_kind": "palm"}).select("kind").csv().execute().data
    assert csv == "kind\npalm\npalm"
    # A function returning one row answers an object, shaped too; a scalar function ignores the grammar.
    added = client.rpc("add_reading", {"p_kind": "face"}).select("kind").execute().data
    assert added == {"kind": "face"}
    assert client.rpc("count_readings", {}).eq("kind", "palm").execute().data == 5


def test_rpc_get_splits_arguments_from_filters(server, app):
    client = signed_in_client(server, app)
    client.table("readings").insert([{"kind": "palm"}, {"kind": "face"}]).execute()
    token = client.auth.get_session().access_token
    headers = {"apikey": app.publishable_key, "Authorization": f"Bearer {token}"}
    # p_kind=palm is no filter: an argument; kind=eq.palm parses as one: a filter on the rows.
    by_argument = httpx.get(server.url + "/rest/v1/rpc/list_readings", params={"p_kind": "palm", "select": "kind"}, headers=headers)
    assert by_argument.status_code == 200 and by_argument.json() == [{"kind": "palm"}], by_argument.text
    by_filter = httpx.get(server.url + "/rest/v1/rpc/list_readings", params={"kind": "eq.face", "select": "kind"}, headers=headers)
    assert by_filter.json() == [{"kind": "face"}], by_filter.text
    assert by_filter.headers["content-range"] == "0-0/*"
    bad = httpx.get(server.url + "/rest/v1/rpc/list_readings", params={"order": "kind.sideways"}, headers=headers)
    assert bad.status_code == 400 and bad.json()["code"] == "PGRST100", bad.text
    unknown = httpx.get(server.url + "/rest/v1/rpc/list_readings", params={"banana": "eq.1"}, headers=headers)
    assert unknown.status_code == 400 and unknown.json()["code"] == "42703", unknown.text
