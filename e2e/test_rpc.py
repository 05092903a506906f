"""Issue 4, must show 4: the official `supabase` Python client's `rpc()` against the example functions."""

from __future__ import annotations

import pytest
from postgrest.exceptions import APIError
from supabase import ClientOptions, create_client

from conftest import new_device_secret


def signed_in_client(server, app):
    client = create_client(server.url, app.publishable_key, ClientOptions(auto_refresh_token=False, persist_session=False))
    client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
    return client


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
