"""The name asked once, the profile, account setup and roles (the Apple sign-in app's document, its scenarios as tests).

Apple gives the app the user's name on the first sign-in only; the app sends it with `PUT /auth/v1/user {data}` as
supabase clients do with `updateUser(data:)`. Accounts without a real name carry `needs_account_setup` (in
app_metadata and the access token) until `rpc("complete_account_setup")`, which assigns the app's default role once.
"""

from __future__ import annotations

import base64
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import psql, run
from support import assert_error, bearer_headers, create_app, refresh
from test_apple_sign_in import apple, configure_apple, sign_in  # noqa: F401 (the stand-in fixture)


@pytest.fixture(scope="module")
def setup_app(database, apple):  # noqa: F811
    app = create_app(database, "account-setup")
    configure_apple(database, app, apple.url)
    run([database.bin, "apps", "configure", "--app", app.app_id, "--default-role", "client"],
        env={"DATABASE_URL": database.super_url})
    return app


def headers(app, session) -> dict:
    return bearer_headers(app, session["access_token"])


def new_account(http, server, app, apple, sub) -> dict:  # noqa: F811
    response = sign_in(http, server, app, apple.id_token(sub))
    assert response.status_code == 200, response.text
    return response.json()


def put_user(http, server, app, session, data):
    return http.put(server.url + "/auth/v1/user", headers=headers(app, session), json={"data": data})


def claims(access_token: str) -> dict:
    payload = access_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@pytest.mark.parametrize(
    ("sent", "stored", "needs_setup"),
    [
        ({"full_name": "  John Doe "}, "John Doe", False),  # Apple shared the full name
        ({"given_name": "John", "family_name": "Doe"}, "John Doe", False),  # as given + family name
        ({"given_name": "Alex"}, "Alex", False),  # a partial name is a name
        ({"full_name": ""}, None, True),  # the user hid the name
        ({"full_name": "   "}, None, True),  # whitespace
        ({"full_name": "User"}, None, True),  # the placeholder
    ],
)
def test_the_name_apple_gave_is_stored_once_or_setup_is_asked(http, server, apple, setup_app, sent, stored, needs_setup):  # noqa: F811
    session = new_account(http, server, setup_app, apple, f"name-{sorted(sent.items())}")
    assert session["user"]["app_metadata"]["needs_account_setup"] is True
    response = put_user(http, server, setup_app, session, sent)
    assert response.status_code == 200, response.text
    user = response.json()
    assert user["user_metadata"].get("full_name") == stored
    assert user["app_metadata"]["needs_account_setup"] is needs_setup
    refreshed = refresh(http, server, setup_app, session["refresh_token"]).json()
    assert claims(refreshed["access_token"])["app_metadata"]["needs_account_setup"] is needs_setup


def test_a_stored_name_survives_later_empty_names_and_sign_ins(http, server, apple, setup_app):  # noqa: F811
    session = new_account(http, server, setup_app, apple, "keeps-name")
    assert put_user(http, server, setup_app, session, {"full_name": "Jane Roe"}).status_code == 200
    for empty in ({"full_name": ""}, {"given_name": " ", "family_name": ""}, {"full_name": "User"}):
        assert put_user(http, server, setup_app, session, empty).json()["user_metadata"]["full_name"] == "Jane Roe"
    later = new_account(http, server, setup_app, apple, "keeps-name")  # a later sign-in: Apple sends no name
    assert later["user"]["user_metadata"]["full_name"] == "Jane Roe"
    assert later["user"]["app_metadata"]["needs_account_setup"] is False


@pytest.mark.parametrize(
    "data",
    [{"full_name": "x" * 201}, {"full_name": "Bad\u0007Name"}, {"full_name": 12}, {"timezone": "Mars/Olympus"},
     {"language": "not a tag!"}, {"onboarding_completed": "yes"}, {"avatar_url": "javascript:alert(1)"}],
)
def test_bad_profile_values_are_refused_with_a_clear_400(http, server, apple, setup_app, data):  # noqa: F811
    session = new_account(http, server, setup_app, apple, "bad-values")
    response = put_user(http, server, setup_app, session, data)
    assert_error(response, 400, "validation_failed", echoed=False)


def test_profile_keys_and_other_metadata(http, server, apple, setup_app):  # noqa: F811
    session = new_account(http, server, setup_app, apple, "profile-keys")
    response = put_user(http, server, setup_app, session, {
        "timezone": "Europe/Paris", "language": "pt-BR", "onboarding_completed": True, "notification_enabled": True,
        "avatar_url": "https://example.com/a.png", "favourite_colour": "teal",
    })
    assert response.status_code == 200, response.text
    metadata = response.json()["user_metadata"]
    assert metadata["timezone"] == "Europe/Paris" and metadata["favourite_colour"] == "teal"
    assert metadata["avatar_url"] == "https://example.com/a.png" and metadata["onboarding_completed"] is True


def test_complete_account_setup_assigns_the_role_once_even_concurrently(http, server, database, apple, setup_app):  # noqa: F811
    session = new_account(http, server, setup_app, apple, "setup-once")
    url = server.url + "/rest/v1/rpc/complete_account_setup"
    refused = http.post(url, headers=headers(setup_app, session), json={"p_full_name": " User "})
    assert refused.status_code == 400, refused.text

    clients = [httpx.Client(timeout=30) for _ in range(10)]
    try:
        with ThreadPoolExecutor(max_workers=10) as pool:
            responses = list(pool.map(
                lambda c: c.post(url, headers=headers(setup_app, session), json={"p_full_name": "Sam Lee"}), clients))
    finally:
        for client in clients:
            client.close()
    assert [r.status_code for r in responses] == [200] * 10, [r.text for r in responses][:2]
    assert responses[0].json()["roles"] == ["client"]
    again = http.post(url, headers=headers(setup_app, session), json={"p_full_name": "Sam Lee"})
    assert again.status_code == 200 and again.json()["roles"] == ["client"]
    user_id = session["user"]["id"]
    assert psql(database.super_url, f"select count(*) from guestpass.user_roles where user_id = '{user_id}'") == "1"

    refreshed = refresh(http, server, setup_app, session["refresh_token"]).json()
    token_claims = claims(refreshed["access_token"])
    assert token_claims["app_metadata"]["roles"] == ["client"]
    assert token_claims["app_metadata"]["needs_account_setup"] is False
    # auth.has_role reads the claims, as a policy would.
    has_role = psql(
        database.super_url,
        "select set_config('request.jwt.claims', '" + json.dumps(token_claims).replace("'", "''") + "', true), "
        "auth.has_role('client'), auth.has_role('admin')",
    )
    assert has_role.endswith("|t|f"), has_role


def test_a_timezone_change_through_the_profile_buys_no_second_allowance_today(http, server, setup_app):
    from support import sign_up_guest

    guest = sign_up_guest(http, server, setup_app)
    session = {"access_token": guest.access_token}
    rpc_url = server.url + "/rest/v1/rpc/"
    limit = http.post(rpc_url + "get_quota", headers=headers(setup_app, session), json={}).json()["daily_limit"]
    for _ in range(limit):
        assert http.post(rpc_url + "consume_quota", headers=headers(setup_app, session), json={}).status_code == 200
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):
        assert put_user(http, server, setup_app, session, {"timezone": zone}).status_code == 200
        quota = http.post(rpc_url + "get_quota", headers=headers(setup_app, session), json={}).json()
        assert quota["quota_remaining"] == 0, (zone, quota)
