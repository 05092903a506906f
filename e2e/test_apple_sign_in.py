"""Sign in with Apple end to end: `POST /auth/v1/token?grant_type=id_token` against `guestpass apple-standin`, a real
HTTP server publishing RS256 keys at `/auth/keys` as Apple does and minting identity tokens, so the production key
fetch and verification run unchanged.

A guest links Apple and keeps its id and every row; an Apple id already linked elsewhere is refused with 422 and
nothing changes; every bad token is a 401 that creates nothing; Apple's keys out of reach are a 503 with a cold cache
and no obstacle with a warm one; the official Python client's `sign_in_with_id_token` works unchanged.
"""

from __future__ import annotations

import hashlib
import time
import uuid

import httpx
import pytest

from conftest import StandIn, api_headers, free_port, new_device_secret, psql, run
from support import assert_error, bearer_headers, create_app, guest_headers, make_client, refresh, sign_up_guest

AUDIENCE = "com.example.fortunia"
TEAM_ID = "TEAM000001"
KEY_ID = "SIWAKEY001"
TOKEN_URL = "/auth/v1/token?grant_type=id_token"


class AppleStandIn(StandIn):
    """A running `guestpass apple-standin` and its control endpoints."""

    PROBE = "/_standin/stats"

    def id_token(self, sub: str, **claims) -> str:
        response = httpx.post(f"{self.url}/_standin/id-token", json={"sub": sub, "aud": AUDIENCE, **claims}, timeout=5)
        assert response.status_code == 200, response.text
        return response.json()["id_token"]

    def rotate(self) -> str:
        return httpx.post(f"{self.url}/_standin/rotate-keys", timeout=5).json()["kid"]

    def outage(self, down: bool) -> None:
        assert httpx.post(f"{self.url}/_standin/outage", json={"down": down}, timeout=5).status_code == 204

    def key_fetches(self) -> int:
        return httpx.get(f"{self.url}/_standin/stats", timeout=5).json()["key_fetches"]

    def revoked(self) -> list[str]:
        return httpx.get(f"{self.url}/_standin/stats", timeout=5).json()["revoked"]

    def authorization_code(self, sub: str) -> str:
        response = httpx.post(f"{self.url}/_standin/authorization-code", json={"sub": sub, "aud": AUDIENCE}, timeout=5)
        assert response.status_code == 200, response.text
        return response.json()["code"]



@pytest.fixture(scope="module")
def apple(database):
    stand_in = AppleStandIn.start(database, "apple-standin", "siwa-key", "--team-id", TEAM_ID, "--key-id", KEY_ID)
    try:
        yield stand_in
    finally:
        stand_in.stop()


def configure_apple(database, app, base_url: str, key_file=None) -> None:
    key = ["--apple-team-id", TEAM_ID, "--apple-key-id", KEY_ID, "--apple-key-path", str(key_file)] if key_file else []
    run(
        [database.bin, "apps", "configure", "--app", app.app_id, "--apple-audiences", f"{AUDIENCE},com.example.other",
         "--apple-base-url", base_url, *key],
        env={"DATABASE_URL": database.super_url},
    )


@pytest.fixture(scope="module")
def apple_app(database, apple):
    app = create_app(database, "apple-sign-in")
    configure_apple(database, app, apple.url, apple.key_file)
    return app


def nonce_pair() -> tuple[str, str]:
    """A raw nonce and what Apple's token carries: hex(sha256(raw))."""
    raw = uuid.uuid4().hex
    return raw, hashlib.sha256(raw.encode()).hexdigest()


def sign_in(http, server, app, id_token: str, nonce: str | None = None, bearer: str | None = None, link: bool = False,
            code: str | None = None):
    body = {"provider": "apple", "id_token": id_token}
    if code is not None:
        body["authorization_code"] = code
    if nonce is not None:
        body["nonce"] = nonce
    if link:
        body["link_identity"] = True
    headers = api_headers(app) if bearer is None else bearer_headers(app, bearer)
    return http.post(server.url + TOKEN_URL, headers=headers, json=body)


def users_of(database, app) -> int:
    return int(psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'"))


def rpc(http, server, app, access_token: str, name: str, body: dict | None = None):
    headers = bearer_headers(app, access_token)
    return http.post(f"{server.url}/rest/v1/rpc/{name}", headers=headers, json=body or {})


def test_a_guest_links_apple_and_keeps_its_id_rows_credits_and_usage(http, server, database, apple, apple_app):
    guest = sign_up_guest(http, server, apple_app)
    for kind in ("palm", "coffee"):
        assert rpc(http, server, apple_app, guest.access_token, "add_reading", {"p_kind": kind}).status_code == 200
    run([database.bin, "apps", "grant-credits", "--user", guest.user_id, "--amount", "5"], env={"DATABASE_URL": database.super_url})
    before = rpc(http, server, apple_app, guest.access_token, "get_quota").json()

    raw, hashed = nonce_pair()
    response = sign_in(http, server, apple_app, apple.id_token("apple-user-1", nonce=hashed, email="alex@example.com"), raw,
                       bearer=guest.access_token, link=True)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["user"]["id"] == guest.user_id
    assert body["user"]["is_anonymous"] is False
    assert body["user"]["email"] == "alex@example.com"
    assert [(i["provider"], i["id"]) for i in body["user"]["identities"]] == [("apple", "apple-user-1")]
    assert body["user"]["app_metadata"]["providers"] == ["apple"]
    assert body["refresh_token"] != guest.refresh_token

    # The old session ended with its refresh token; the new one works.
    assert_error(refresh(http, server, apple_app, guest.refresh_token), 400, "session_not_found", echoed=False)
    assert refresh(http, server, apple_app, body["refresh_token"]).status_code == 200

    readings = rpc(http, server, apple_app, body["access_token"], "list_readings").json()
    assert sorted(r["kind"] for r in readings) == ["coffee", "palm"]
    assert rpc(http, server, apple_app, body["access_token"], "get_quota").json() == before
    profile = http.get(server.url + "/auth/v1/user", headers=bearer_headers(apple_app, body["access_token"])).json()
    assert profile["is_anonymous"] is False and profile["identities"][0]["identity_data"]["sub"] == "apple-user-1"

    # Signing in again with the same Apple id, from anywhere, is that user.
    again = sign_in(http, server, apple_app, apple.id_token("apple-user-1"))
    assert again.status_code == 200, again.text
    assert again.json()["user"]["id"] == guest.user_id


def test_an_apple_id_linked_elsewhere_is_refused_and_nothing_changes(http, server, database, apple, apple_app):
    first = sign_up_guest(http, server, apple_app)
    assert sign_in(http, server, apple_app, apple.id_token("apple-user-2"), bearer=first.access_token, link=True).status_code == 200
    second = sign_up_guest(http, server, apple_app)
    assert rpc(http, server, apple_app, second.access_token, "add_reading", {"p_kind": "palm"}).status_code == 200

    response = sign_in(http, server, apple_app, apple.id_token("apple-user-2"), bearer=second.access_token, link=True)
    assert_error(response, 422, "identity_already_exists", echoed=False)
    profile = http.get(server.url + "/auth/v1/user", headers=guest_headers(apple_app, second))
    assert profile.status_code == 200 and profile.json()["is_anonymous"] is True and profile.json()["identities"] == []
    assert refresh(http, server, apple_app, second.refresh_token).status_code == 200
    assert len(rpc(http, server, apple_app, second.access_token, "list_readings").json()) == 1


def test_first_sign_in_creates_an_account_through_the_python_client(server, database, apple, apple_app):
    raw, hashed = nonce_pair()
    client = make_client(server, apple_app)
    response = client.auth.sign_in_with_id_token(
        {"provider": "apple", "token": apple.id_token("apple-user-3", nonce=hashed, email="x@privaterelay.appleid.com",
                                                       is_private_email=True), "nonce": raw}
    )
    assert response.user is not None and response.session is not None
    assert response.user.is_anonymous is False
    assert response.user.identities[0].provider == "apple"
    assert response.user.identities[0].identity_data["is_private_email"] is True
    second = make_client(server, apple_app).auth.sign_in_with_id_token(
        {"provider": "apple", "token": apple.id_token("apple-user-3")}
    )
    assert second.user.id == response.user.id


@pytest.mark.parametrize(
    "case",
    ["expired", "wrong audience", "wrong issuer", "bad signature", "unknown kid", "hs256", "nonce mismatch",
     "nonce missing", "nonce not in token", "issued in the future"],
)
def test_bad_tokens_are_refused_with_401_and_create_nothing(http, server, database, apple, apple_app, case):
    raw, hashed = nonce_pair()
    sub = f"refused-{uuid.uuid4()}"
    token, nonce = {
        "expired": (lambda: (apple.id_token(sub, expires_in=-600), None)),
        "wrong audience": (lambda: (apple.id_token(sub, aud="com.evil.app"), None)),
        "wrong issuer": (lambda: (apple.id_token(sub, iss="https://evil.example.com"), None)),
        "bad signature": (lambda: (apple.id_token(sub, foreign_key=True), None)),
        "unknown kid": (lambda: (apple.id_token(sub, kid="no-such-kid"), None)),
        "hs256": (lambda: (hs256_token(sub), None)),
        "nonce mismatch": (lambda: (apple.id_token(sub, nonce=hashed), raw + "x")),
        "nonce missing": (lambda: (apple.id_token(sub, nonce=hashed), None)),
        "nonce not in token": (lambda: (apple.id_token(sub), raw)),
        "issued in the future": (lambda: (apple.id_token(sub, iat_offset=3600, expires_in=7200), None)),
    }[case]()
    users = users_of(database, apple_app)
    response = sign_in(http, server, apple_app, token, nonce)
    assert response.status_code == 401, response.text
    assert response.json()["code"] in ("bad_jwt", "bad_oauth_callback")
    assert users_of(database, apple_app) == users
    identities = psql(database.super_url, f"select count(*) from guestpass.identities where subject = '{sub}'")
    assert identities == "0"


def hs256_token(sub: str) -> str:
    """An HS256 token claiming to be Apple's (signed with a guessable secret): the algorithm must be refused."""
    import jwt  # pyjwt

    now = int(time.time())
    claims = {"iss": "https://appleid.apple.com", "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600}
    return jwt.encode(claims, "secret", algorithm="HS256", headers={"kid": "any"})


def test_apple_unreachable_is_503_with_a_cold_cache_and_harmless_with_a_warm_one(http, server, database, apple, apple_app):
    cold = create_app(database, "apple-unreachable")
    configure_apple(database, cold, f"http://127.0.0.1:{free_port()}")
    response = sign_in(http, server, cold, apple.id_token("apple-user-4"))
    assert_error(response, 503, "provider_unavailable", echoed=False)
    assert users_of(database, cold) == 0

    # Warm: the keys were fetched by earlier sign-ins of apple_app; Apple goes down; known keys still verify.
    assert sign_in(http, server, apple_app, apple.id_token("apple-user-5")).status_code == 200
    apple.outage(True)
    try:
        assert sign_in(http, server, apple_app, apple.id_token("apple-user-6")).status_code == 200
    finally:
        apple.outage(False)


def test_twenty_concurrent_first_sign_ins_with_one_apple_id_make_one_account(server, database, apple, apple_app):
    from concurrent.futures import ThreadPoolExecutor

    tokens = [apple.id_token("apple-user-concurrent") for _ in range(20)]
    clients = [httpx.Client(timeout=30) for _ in tokens]
    try:
        with ThreadPoolExecutor(max_workers=len(tokens)) as pool:
            responses = list(pool.map(lambda i: sign_in(clients[i], server, apple_app, tokens[i]), range(len(tokens))))
    finally:
        for client in clients:
            client.close()
    assert [response.status_code for response in responses] == [200] * len(tokens), [r.text for r in responses][:3]
    assert len({response.json()["user"]["id"] for response in responses}) == 1
    owners = psql(
        database.super_url,
        f"select count(distinct user_id) || ' ' || count(*) from guestpass.identities "
        f"where app_id = '{apple_app.app_id}' and subject = 'apple-user-concurrent'",
    )
    assert owners == "1 1"


def ledger_sum_and_balance(database, user_id: str) -> str:
    return psql(
        database.super_url,
        f"select coalesce((select sum(change) from guestpass.credit_ledger where user_id = '{user_id}'), 0) || ' ' || "
        f"(select credits_balance from public.users where id = '{user_id}')",
    )


def grant(database, user_id: str, amount: int) -> None:
    run([database.bin, "apps", "grant-credits", "--user", user_id, "--amount", str(amount)],
        env={"DATABASE_URL": database.super_url})


def merge(http, server, app, access_token: str, guest_refresh_token: str):
    headers = bearer_headers(app, access_token)
    return http.post(server.url + "/v1/account/merge", headers=headers, json={"guest_refresh_token": guest_refresh_token})


def test_after_identity_already_exists_the_guest_merges_into_the_account(http, server, database, apple, apple_app):
    account = sign_in(http, server, apple_app, apple.id_token("apple-user-merge")).json()
    account_id = account["user"]["id"]
    assert rpc(http, server, apple_app, account["access_token"], "add_reading", {"p_kind": "face"}).status_code == 200
    grant(database, account_id, 3)

    guest = sign_up_guest(http, server, apple_app)
    for kind in ("palm", "coffee"):
        assert rpc(http, server, apple_app, guest.access_token, "add_reading", {"p_kind": kind}).status_code == 200
    grant(database, guest.user_id, 4)
    def used(access_token):
        quota = rpc(http, server, apple_app, access_token, "get_quota").json()
        return quota["daily_limit"] - quota["quota_remaining"], quota["daily_limit"]

    used_before, limit = used(account["access_token"])
    guest_used, _ = used(guest.access_token)
    assert used_before == 1 and guest_used == 2  # add_reading meters the quota

    refused = sign_in(http, server, apple_app, apple.id_token("apple-user-merge"), bearer=guest.access_token, link=True)
    assert_error(refused, 422, "identity_already_exists", echoed=False)

    response = merge(http, server, apple_app, account["access_token"], guest.refresh_token)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["user_id"] == account_id and body["merged_user_id"] == guest.user_id
    assert body["credits_moved"] == 4 and body["credits_balance"] == 7
    assert body["rows_moved"]["public.readings"] == 2 and body["rows_moved"]["public.devices"] == 1

    readings = rpc(http, server, apple_app, account["access_token"], "list_readings").json()
    assert sorted(r["kind"] for r in readings) == ["coffee", "face", "palm"]
    assert ledger_sum_and_balance(database, account_id) == "7 7"
    assert psql(database.super_url, f"select count(*) from public.users where id = '{guest.user_id}'") == "0"
    quota = rpc(http, server, apple_app, account["access_token"], "get_quota").json()
    assert quota["quota_remaining"] == max(limit - used_before - guest_used, 0) and quota["credits_remaining"] == 7
    # The guest's token is spent: refreshing or merging it again is refused.
    spent = refresh(http, server, apple_app, guest.refresh_token)
    assert spent.status_code == 400 and spent.json()["code"] in ("refresh_token_not_found", "session_not_found"), spent.text
    assert_error(merge(http, server, apple_app, account["access_token"], guest.refresh_token), 400,
                 "refresh_token_not_found", echoed=False)


def test_merge_refuses_what_is_not_a_live_guest_of_the_app(http, server, database, apple, apple_app):
    account = sign_in(http, server, apple_app, apple.id_token("apple-user-merge-2")).json()
    assert_error(merge(http, server, apple_app, account["access_token"], account["refresh_token"]), 422, "same_user",
                 echoed=False)
    other = sign_in(http, server, apple_app, apple.id_token("apple-user-merge-3")).json()
    assert_error(merge(http, server, apple_app, account["access_token"], other["refresh_token"]), 422, "not_a_guest",
                 echoed=False)
    foreign_app = create_app(database, "merge-foreign")
    foreign_guest = sign_up_guest(http, server, foreign_app)
    assert_error(merge(http, server, apple_app, account["access_token"], foreign_guest.refresh_token), 400,
                 "refresh_token_not_found", echoed=False)
    signed_out = sign_up_guest(http, server, apple_app)
    http.post(server.url + "/auth/v1/logout", headers=guest_headers(apple_app, signed_out))
    assert_error(merge(http, server, apple_app, account["access_token"], signed_out.refresh_token), 400,
                 "refresh_token_not_found", echoed=False)
    assert psql(database.super_url, f"select count(*) from public.users where id = '{foreign_guest.user_id}'") == "1"


def test_twenty_concurrent_merges_of_one_guest_merge_it_once(server, database, apple, apple_app):
    from concurrent.futures import ThreadPoolExecutor

    with httpx.Client(timeout=30) as http:
        account = sign_in(http, server, apple_app, apple.id_token("apple-user-merge-4")).json()
        guest = sign_up_guest(http, server, apple_app)
        grant(database, guest.user_id, 5)
    clients = [httpx.Client(timeout=30) for _ in range(20)]
    try:
        with ThreadPoolExecutor(max_workers=20) as pool:
            responses = list(pool.map(
                lambda i: merge(clients[i], server, apple_app, account["access_token"], guest.refresh_token), range(20)))
    finally:
        for client in clients:
            client.close()
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] + [400] * 19, [r.text for r in responses if r.status_code not in (200, 400)]
    assert ledger_sum_and_balance(database, account["user"]["id"]) == "5 5"


def test_a_python_client_guest_links_with_the_swift_clients_exact_body(http, server, apple, apple_app):
    """The guest lives in supabase-py (anonymous sign-in, RPC); the link is the body supabase-swift's
    `linkIdentityWithIdToken` sends (raw nonce, `link_identity`, `gotrue_meta_security`) with the guest's token; the
    client then carries on with the new session and sees its rows as the upgraded user."""
    client = make_client(server, apple_app)
    guest = client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
    client.rpc("add_reading", {"p_kind": "face"}).execute()
    raw, hashed = nonce_pair()
    response = http.post(
        server.url + TOKEN_URL,
        headers={"apikey": apple_app.publishable_key, "Authorization": f"Bearer {guest.session.access_token}",
                 "X-Supabase-Api-Version": "2024-01-01"},
        json={"provider": "apple", "id_token": apple.id_token("apple-user-py", nonce=hashed), "nonce": raw,
              "link_identity": True, "gotrue_meta_security": {"captcha_token": None}},
    )
    assert response.status_code == 200, response.text
    linked = response.json()
    client.auth.set_session(linked["access_token"], linked["refresh_token"])
    user = client.auth.get_user().user
    assert user.id == guest.user.id and user.is_anonymous is False
    assert [r["kind"] for r in client.rpc("list_readings", {}).execute().data] == ["face"]
