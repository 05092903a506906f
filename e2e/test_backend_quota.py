"""Issue 26: an app's own backend reads and spends its users' quota with the secret key, as the quota document's
server-side function does: supabase-py created with the secret key (`create_client(url, secret_key)`, no user
session) calls `rpc('get_quota', {p_user_id})` and `rpc('consume_quota', {p_user_id, p_request_id})` for a user of its
app: the same free allowance, idempotency, 429 with Retry-After and ledger as the user's own call. Another app's user
and an id no one has are the same 404 PT404; a signed-in user still may pass only itself.
"""

from __future__ import annotations

import uuid

import pytest
from postgrest.exceptions import APIError as PostgrestAPIError
from supabase import ClientOptions, create_client

from conftest import psql
from support import create_app, guest_headers, sign_up_guest


@pytest.fixture(scope="module")
def quota_app(database):
    return create_app(database, "backend-quota")


def backend(server, app):
    """The app's backend: supabase-py with the secret key, as a server-side function holds it."""
    return create_client(server.url, app.secret_key, ClientOptions(auto_refresh_token=False, persist_session=False))


def refusal(call) -> PostgrestAPIError:
    with pytest.raises(PostgrestAPIError) as caught:
        call()
    return caught.value


def test_the_backend_spends_a_users_quota_as_the_user_would(server, quota_app, database, http):
    user = sign_up_guest(http, server, quota_app)
    sb = backend(server, quota_app)

    quota = sb.rpc("get_quota", {"p_user_id": user.user_id}).execute().data
    assert quota["quota_remaining"] == 3 and quota["credits_remaining"] == 0, quota

    job = f"job-{uuid.uuid4()}"
    first = sb.rpc("consume_quota", {"p_user_id": user.user_id, "p_request_id": job}).execute().data
    assert first["charged"] == "free" and first["quota_remaining"] == 2, first
    again = sb.rpc("consume_quota", {"p_user_id": user.user_id, "p_request_id": job}).execute().data
    assert again == first, "a retried request id returns the first answer"
    # The user's own view agrees: one use was charged.
    own = http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(quota_app, user), json={})
    assert own.status_code == 200 and own.json()["quota_remaining"] == 2, own.text

    # A credit from the backend, then the last free uses and the credit; then 429 with Retry-After.
    sb.rpc("grant_credits", {"p_user_id": user.user_id, "p_amount": 1}).execute()
    charged = [
        sb.rpc("consume_quota", {"p_user_id": user.user_id, "p_request_id": f"{job}-{i}"}).execute().data["charged"]
        for i in range(3)
    ]
    assert charged == ["free", "free", "credit"]
    over = http.post(
        server.url + "/rest/v1/rpc/consume_quota",
        headers={"apikey": quota_app.secret_key},
        json={"p_user_id": user.user_id},
    )
    assert over.status_code == 429, over.text
    assert over.json()["code"] == "PT429" and int(over.headers["Retry-After"]) >= 1
    ledger = psql(
        database.super_url,
        f"select string_agg(change || ':' || reason || ':' || coalesce(idempotency_key, '-'), ',' order by id) "
        f"from guestpass.credit_ledger where user_id = '{user.user_id}'",
    )
    assert ledger == f"1:grant:-,-1:consume:consume:{job}-2", ledger


def test_another_apps_user_and_an_unknown_id_are_one_404(server, quota_app, other_app, http):
    stranger = sign_up_guest(http, server, other_app)
    sb = backend(server, quota_app)
    for function in ("get_quota", "consume_quota"):
        foreign = refusal(lambda: sb.rpc(function, {"p_user_id": stranger.user_id}).execute())
        unknown = refusal(lambda: sb.rpc(function, {"p_user_id": str(uuid.uuid4())}).execute())
        assert foreign.code == "PT404" and foreign.message == "unknown user", foreign
        assert (foreign.code, foreign.message, foreign.details, foreign.hint) == (
            unknown.code, unknown.message, unknown.details, unknown.hint
        ), "another app's user and an unknown id must be indistinguishable"
    raw = http.post(
        server.url + "/rest/v1/rpc/get_quota",
        headers={"apikey": quota_app.secret_key},
        json={"p_user_id": stranger.user_id},
    )
    assert raw.status_code == 404, raw.text
    own = http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(other_app, stranger), json={})
    assert own.json()["quota_remaining"] == 3, "the stranger was not charged"
    missing = refusal(lambda: sb.rpc("get_quota", {}).execute())
    assert missing.code == "22023", missing


def test_a_signed_in_user_still_passes_only_itself(server, quota_app, http):
    alice, bob = sign_up_guest(http, server, quota_app), sign_up_guest(http, server, quota_app)
    response = http.post(
        server.url + "/rest/v1/rpc/consume_quota", headers=guest_headers(quota_app, bob), json={"p_user_id": alice.user_id}
    )
    assert response.status_code == 403 and response.json()["code"] == "42501", response.text
