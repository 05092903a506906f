"""Attacks on the email flows, kept closed: guessing codes (5 wrong tries kill a code), replaying a used, expired or
another app's code or link, mail bombing (one mail per address per interval), account enumeration (sign-up, recovery,
resend and password sign-in answer alike), open redirects through `redirect_to`, PKCE codes with the wrong verifier,
malformed, oversized, NUL-laden and mistyped input (always a 4xx in GoTrue's envelope, never a 5xx), weak passwords,
and secrets (codes, link tokens, passwords, the SMTP password, keys) in the server's log or in the clear in the
database.
"""

from __future__ import annotations

import json
import re
import secrets

import pytest

pytest.register_assert_rewrite("email_support")

from email_support import (  # noqa: E402
    SITE_URL,
    SMTP_PASSWORD,
    allow_next_mail,
    api_error,
    assert_api_error,
    assert_gotrue_error,
    assert_no_secrets_in_log,
    auth_call,
    claims,
    email_client,
    fragment_of,
    guest_client,
    link_query,
    mailed,
    new_address,
    new_email_app,
    new_password,
    on_server,
    open_link,
    outbox_count,
    query_of,
    quoted,
    sql,
    outbox_rows,
    user_count,
    wait_until,
)

pytest_plugins = ("email_support",)
pytestmark = pytest.mark.attack


@pytest.fixture()
def server(email_server):
    """Here `server` is the email files' server, on their own database (email_support explains why)."""
    return email_server


@pytest.fixture()
def app(email_app):
    """This file's own app on that database, mailing through the session's catcher."""
    return email_app


def signed_up(server, app, catcher, address: str | None = None, password: str | None = None, flow: str = "implicit"):
    """An unconfirmed sign-up and its mail: (address, password, user id, message, code, link)."""
    address = address or new_address("attack")
    password = password or new_password()
    seq = catcher.last_seq()
    user = email_client(server, app, flow).auth.sign_up({"email": address, "password": password}).user
    message, code, link = mailed(catcher, address, seq)
    return address, password, user.id, message, code, link


def wrong_codes(right: str, count: int) -> list[str]:
    codes: list[str] = []
    while len(codes) < count:
        guess = f"{secrets.randbelow(10 ** len(right)):0{len(right)}d}"
        if guess != right and guess not in codes:
            codes.append(guess)
    return codes


def verify(http, server, app, address, token, verify_type="signup"):
    return auth_call(http, server, app, "POST", "verify", {"email": address, "token": token, "type": verify_type})


def test_five_wrong_codes_kill_the_code(server, app, email_database, mail_catcher, http):
    address, _, user_id, message, code, link = signed_up(server, app, mail_catcher)
    # Guessed as `email` (any of sign-up, magic link and recovery): each guess counts against the sign-up code.
    for guess in wrong_codes(code, 5):
        assert_gotrue_error(verify(http, server, app, address, guess, "email"), 403, "otp_expired")
    assert sql(email_database, "select failed_attempts from guestpass.email_codes "
                               f"where user_id = '{user_id}' and purpose = 'signup'") == "5"
    refused = assert_gotrue_error(verify(http, server, app, address, code), 403, "otp_expired")
    assert refused["message"] == "Token has expired or is invalid"
    dead_link = open_link(http, server, link)
    assert fragment_of(dead_link.headers["location"]).get("error_code") == "otp_expired", dead_link.headers

    # Not locked out for good: a new code (after the interval) works.
    allow_next_mail(email_database, address)
    email_client(server, app).auth.resend({"type": "signup", "email": address})
    _, fresh, _ = mailed(mail_catcher, address, message.seq)
    assert verify(http, server, app, address, fresh).status_code == 200


def test_four_wrong_codes_do_not(server, app, mail_catcher, http):
    address, _, user_id, _, code, _ = signed_up(server, app, mail_catcher)
    for guess in wrong_codes(code, 4):
        assert_gotrue_error(verify(http, server, app, address, guess), 403, "otp_expired")
    assert verify(http, server, app, address, code).json()["user"]["id"] == user_id


def test_a_used_code_and_a_used_link_are_refused(server, app, mail_catcher, http):
    address, _, _, _, code, link = signed_up(server, app, mail_catcher)
    assert verify(http, server, app, address, code).status_code == 200
    assert_gotrue_error(verify(http, server, app, address, code), 403, "otp_expired")
    assert_gotrue_error(verify(http, server, app, address, code, "email"), 403, "otp_expired")
    opened = open_link(http, server, link)
    assert opened.status_code == 303 and fragment_of(opened.headers["location"])["error_code"] == "otp_expired"
    assert "access_token" not in opened.headers["location"]


def test_an_expired_code_and_link_are_refused(server, app, email_database, mail_catcher, http):
    address, _, user_id, _, code, link = signed_up(server, app, mail_catcher)
    sql(email_database, "update guestpass.email_codes set expires_at = now() - interval '1 second' "
                        f"where user_id = '{user_id}'")
    assert_gotrue_error(verify(http, server, app, address, code), 403, "otp_expired")
    opened = open_link(http, server, link)
    assert opened.status_code == 303
    refused = fragment_of(opened.headers["location"])
    assert refused["error"] == "access_denied" and refused["error_code"] == "otp_expired"
    assert opened.headers["location"].startswith(SITE_URL)


def test_a_code_of_another_kind_does_not_verify(server, app, email_database, mail_catcher, http):
    address, _, _, _, code, _ = signed_up(server, app, mail_catcher)
    for wrong_type in ("magiclink", "recovery", "email_change"):
        assert_gotrue_error(verify(http, server, app, address, code, wrong_type), 403, "otp_expired")
    assert verify(http, server, app, address, code, "signup").status_code == 200


def test_codes_and_links_of_another_app_do_not_verify(server, app, other_email_app, mail_catcher, http):
    address = new_address("two-apps")
    _, _, here_id, _, here_code, here_link = signed_up(server, app, mail_catcher, address)
    _, _, there_id, _, there_code, _ = signed_up(server, other_email_app, mail_catcher, address)
    assert here_id != there_id
    if here_code != there_code:
        assert_gotrue_error(verify(http, server, other_email_app, address, here_code), 403, "otp_expired")
    opened = open_link(http, server, here_link, app=other_email_app.app_id)
    assert opened.status_code in (303, 400, 403, 404)
    if opened.status_code == 303:
        assert fragment_of(opened.headers["location"]).get("error_code") == "otp_expired", opened.headers
    # Each app's own code still works, for its own user.
    assert verify(http, server, app, address, here_code).json()["user"]["id"] == here_id
    assert verify(http, server, other_email_app, address, there_code).json()["user"]["id"] == there_id


def test_one_mail_per_address_per_interval(server, app, email_database, mail_catcher, http):
    address = new_address("bomb")
    first = auth_call(http, server, app, "POST", "otp", {"email": address, "create_user": True})
    assert first.status_code == 200 and first.json() == {}, first.text
    again = auth_call(http, server, app, "POST", "otp", {"email": address})
    body = assert_gotrue_error(again, 429, "over_email_send_rate_limit")
    seconds = int(re.search(r"after (\d+) seconds", body["message"]).group(1))
    assert 1 <= seconds <= 60 and 1 <= int(again.headers["retry-after"]) <= 60, (body, dict(again.headers))
    # Another route to the same address is the same interval.
    assert_gotrue_error(auth_call(http, server, app, "POST", "resend", {"type": "signup", "email": address}),
                        429, "over_email_send_rate_limit")
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_otp({"email": address.upper()}),
                     429, "over_email_send_rate_limit")
    assert outbox_count(email_database, address) == 1

    allow_next_mail(email_database, address)
    assert auth_call(http, server, app, "POST", "otp", {"email": address}).status_code == 200
    assert outbox_count(email_database, address) == 2


def test_recover_is_silent_when_throttled(server, app, email_database, mail_catcher, http):
    """GoTrue answers 429 to /recover for a real address only (which tells it exists); GuestPass answers {} always."""
    address, _, _, _, _, _ = signed_up(server, app, mail_catcher)
    throttled = auth_call(http, server, app, "POST", "recover", {"email": address})
    unknown = auth_call(http, server, app, "POST", "recover", {"email": new_address("nobody")})
    assert throttled.status_code == unknown.status_code == 200
    assert throttled.json() == unknown.json() == {}
    assert outbox_count(email_database, address) == 1


def test_sign_up_with_a_confirmed_address_reveals_nothing_and_changes_nothing(server, app, email_database, mail_catcher,
                                                                             http):
    address, password, user_id, _, code, _ = signed_up(server, app, mail_catcher)
    assert verify(http, server, app, address, code).status_code == 200
    allow_next_mail(email_database, address)
    mails = outbox_count(email_database, address)
    intruder = new_password()
    answer = email_client(server, app).auth.sign_up({"email": address, "password": intruder,
                                                      "options": {"data": {"x": 1}}})
    assert answer.session is None and answer.user is not None
    assert answer.user.id != user_id and answer.user.identities == []
    assert answer.user.email == address
    assert outbox_count(email_database, address) == mails, "no mail"
    assert user_count(email_database, app, address) == 1
    assert email_client(server, app).auth.sign_in_with_password({"email": address, "password": password}).user.id == user_id
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": intruder}), 400, "invalid_credentials")

    # The same shape as a real new sign-up's answer (keys), so only identities tells.
    fresh = auth_call(http, server, app, "POST", "signup", {"email": new_address("fresh"), "password": new_password()})
    repeat = auth_call(http, server, app, "POST", "signup", {"email": address, "password": new_password()})
    assert fresh.status_code == repeat.status_code == 200
    assert {"id", "aud", "email", "created_at", "updated_at", "app_metadata", "user_metadata"} <= repeat.json().keys()
    assert repeat.json()["id"] != user_id


def test_recover_and_resend_answer_alike_for_unknown_and_known_addresses(server, app, email_database,
                                                                              mail_catcher, http):
    address, _, _, _, code, _ = signed_up(server, app, mail_catcher)
    assert verify(http, server, app, address, code).status_code == 200
    for path, body in (("recover", {}), ("resend", {"type": "signup"}), ("resend", {"type": "email_change"})):
        allow_next_mail(email_database, address)
        known = auth_call(http, server, app, "POST", path, {**body, "email": address})
        unknown = auth_call(http, server, app, "POST", path, {**body, "email": new_address("nobody")})
        assert known.status_code == unknown.status_code == 200, (path, known.text, unknown.text)
        assert known.content == unknown.content == b"{}", (path, known.content, unknown.content)


@pytest.mark.parametrize("target", [
    "https://evil.example/steal",
    "http://localhost:3000@evil.example/steal",
    "http://localhost:3000.evil.example/steal",
    "http://localhost:30000/steal",
    "javascript:alert(1)",
    "myapp://callbackevil",
])
def test_a_redirect_the_app_does_not_allow_leads_to_the_site_url(target, server, app, mail_catcher, http):
    address = new_address("redirect")
    seq = mail_catcher.last_seq()
    email_client(server, app, "implicit").auth.sign_up(
        {"email": address, "password": new_password(), "options": {"email_redirect_to": target}})
    _, _, link = mailed(mail_catcher, address, seq)
    assert link_query(link).get("redirect_to", SITE_URL) == SITE_URL, link
    opened = open_link(http, server, link, redirect_to=target)
    assert opened.status_code == 303
    location = opened.headers["location"]
    assert location.split("#")[0] == SITE_URL, location


def test_a_pkce_code_with_the_wrong_verifier_is_spent(server, app, mail_catcher, http):
    address = new_address("pkce-verifier")
    seq = mail_catcher.last_seq()
    client = email_client(server, app, "pkce")
    client.auth.sign_up({"email": address, "password": new_password()})
    _, _, link = mailed(mail_catcher, address, seq)
    auth_code = query_of(open_link(http, server, link).headers["location"])["code"]
    wrong = auth_call(http, server, app, "POST", "token", {"auth_code": auth_code, "code_verifier": "w" * 64},
                      query={"grant_type": "pkce"})
    assert_gotrue_error(wrong, 403, "bad_code_verifier")
    # The right verifier comes too late: one try per code.
    error = api_error(lambda: client.auth.exchange_code_for_session({"auth_code": auth_code}))
    assert getattr(error, "code", None) == "flow_state_not_found", error


def test_an_access_token_does_not_authenticate_public_email_routes(server, app, mail_catcher, http):
    """supabase-py sends the user's access token on every auth call, public ones included: it must change nothing."""
    client, guest = guest_client(server, app)
    address = new_address("public-bearer")
    seq = mail_catcher.last_seq()
    response = auth_call(http, server, app, "POST", "otp", {"email": address}, token=guest.session.access_token)
    assert response.status_code == 200
    _, code, _ = mailed(mail_catcher, address, seq)
    verified = auth_call(http, server, app, "POST", "verify", {"email": address, "token": code, "type": "email"},
                         token=guest.session.access_token)
    assert verified.status_code == 200 and verified.json()["user"]["id"] != guest.user.id
    assert client.auth.get_user().user.is_anonymous is True


LONG = "a" * 290 + "@example.com"
NUL = "nul\u0000byte@example.com"
BAD_EMAILS = ["not-an-email", "a@b", "a@@example.com", "<a@example.com>", "a b@example.com", "a@example..com",
              "a@-example.com", "", " ", LONG, NUL, "a@exa\u0000mple.com", "😀@example.com.😀"]
WRONG_TYPES = [123, 1.5, True, ["a@example.com"], {"email": "a@example.com"}]


def bad_bodies() -> list[tuple[str, str, object]]:
    """(path, query, body) of requests each route must refuse with a 4xx."""
    password = "Valid-Password-123"
    cases: list[tuple[str, str, object]] = []
    for email in BAD_EMAILS + WRONG_TYPES:
        cases += [
            ("signup", "", {"email": email, "password": password}),
            ("otp", "", {"email": email}),
            ("recover", "", {"email": email}),
            ("resend", "", {"type": "signup", "email": email}),
            ("verify", "", {"type": "signup", "email": email, "token": "123456"}),
            ("token", "grant_type=password", {"email": email, "password": password}),
        ]
    valid = "valid@example.com"
    cases += [
        ("signup", "", {"email": valid, "password": 12345678}),
        ("signup", "", {"email": valid, "password": ["x"]}),
        ("signup", "", {"email": valid, "password": "x" * 73}),
        ("signup", "", {"email": valid, "password": "é" * 40}),
        ("signup", "", {"email": valid, "password": password, "data": "x"}),
        ("signup", "", {"email": valid, "password": password, "data": [1]}),
        ("signup", "", {"email": valid, "password": password, "data": {"x": "y" * 20000}}),
        ("otp", "", {"email": valid, "data": {"x": "y" * 20000}}),
        ("signup", "", {"email": valid, "password": password, "code_challenge": "short", "code_challenge_method": "s256"}),
        ("signup", "", {"email": valid, "password": password, "code_challenge": "c" * 43, "code_challenge_method": "md5"}),
        ("signup", "", {"email": valid, "password": password, "code_challenge": "\u0000" * 43}),
        ("signup", "redirect_to=" + "h" * 3000, {"email": valid, "password": password}),
        ("otp", "", {"email": valid, "create_user": "yes"}),
        ("otp", "", {"email": valid, "data": [1, 2]}),
        ("otp", "", {"phone": "+15555550100"}),
        ("recover", "", {}),
        ("recover", "", {"email": None}),
        ("resend", "", {"type": "bogus", "email": valid}),
        ("resend", "", {"type": 5, "email": valid}),
        ("resend", "", {"email": valid}),
        ("verify", "", {"type": "bogus", "email": valid, "token": "123456"}),
        ("verify", "", {"type": 5, "email": valid, "token": "123456"}),
        ("verify", "", {"type": ["signup"], "email": valid, "token": "123456"}),
        ("verify", "", {"email": valid, "token": "123456"}),
        ("verify", "", {"type": "signup", "email": valid, "token": 123456}),
        ("verify", "", {"type": "signup", "email": valid, "token": "1" * 100}),
        ("verify", "", {"type": "signup", "email": valid, "token": "12\u00003456"}),
        ("verify", "", {"type": "signup", "email": valid, "token": ""}),
        ("verify", "", {"type": "signup", "email": valid}),
        ("verify", "", {"type": "signup", "email": valid, "token": "123456", "token_hash": "abc"}),
        ("verify", "", {"type": "signup", "token_hash": "x" * 200}),
        ("verify", "", {"type": "signup", "token_hash": 5}),
        ("verify", "", {"type": "signup", "token_hash": "\u0000"}),
        ("verify", "", {"type": "sms", "phone": "+15555550100", "token": "123456"}),
        ("token", "grant_type=password", {"email": valid, "password": 5}),
        ("token", "grant_type=password", {"email": valid}),
        ("token", "grant_type=password", {"email": valid, "password": "x" * 5000}),
        ("token", "grant_type=pkce", {"auth_code": "", "code_verifier": ""}),
        ("token", "grant_type=pkce", {"auth_code": "x" * 500, "code_verifier": "v" * 43}),
        ("token", "grant_type=pkce", {"auth_code": 5, "code_verifier": "v" * 43}),
        ("token", "grant_type=pkce", {"auth_code": "00000000-0000-0000-0000-000000000000", "code_verifier": "v" * 43}),
        ("token", "grant_type=pkce", {"auth_code": "00000000-0000-0000-0000-000000000000", "code_verifier": "v" * 500}),
        ("token", "grant_type=pkce", {"auth_code": "a\u0000", "code_verifier": "v" * 43}),
    ]
    return cases


BAD = bad_bodies()


@pytest.mark.parametrize("path,query,body", BAD, ids=[f"{n}-{p}" for n, (p, _, _) in enumerate(BAD)])
def test_bad_input_is_a_4xx_in_gotrues_envelope(path, query, body, server, app, http):
    response = http.post(f"{server.url}/auth/v1/{path}" + (f"?{query}" if query else ""),
                         headers={"apikey": app.publishable_key, "Authorization": f"Bearer {app.publishable_key}",
                                  "X-Supabase-Api-Version": "2024-01-01"},
                         content=json.dumps(body).encode())
    assert 400 <= response.status_code < 500, f"{response.status_code}: {response.text[:300]}"
    assert_gotrue_error(response, response.status_code)


def test_bad_emails_are_validation_failed_with_gotrues_statuses(server, app, http):
    # A NUL anywhere in a JSON string is refused by the body parser first (400 bad_json, a GoTrue code too).
    for path, body in (("signup", {"email": NUL, "password": new_password()}), ("recover", {"email": NUL}),
                       ("verify", {"email": NUL, "token": "123456", "type": "signup"})):
        refused = assert_gotrue_error(auth_call(http, server, app, "POST", path, body), 400)
        assert refused["code"] in ("bad_json", "validation_failed"), refused
    for email in (LONG, "not-an-email", "a@b"):
        assert_gotrue_error(auth_call(http, server, app, "POST", "signup", {"email": email, "password": new_password()}),
                            400, "validation_failed")
        assert_gotrue_error(auth_call(http, server, app, "POST", "recover", {"email": email}), 400, "validation_failed")
        # /verify answers a bad address 422 (GoTrue's "Invalid email format").
        assert_gotrue_error(verify(http, server, app, email, "123456"), 422, "validation_failed")
        # A password sign-in does not say why: invalid_credentials.
        assert_gotrue_error(auth_call(http, server, app, "POST", "token", {"email": email, "password": "x" * 10},
                                      query={"grant_type": "password"}), 400, "invalid_credentials")


@pytest.mark.parametrize("content", [b"{", b"[]", b"null", b"\"x\"", b"{\"email\": \"a@example.com\"" , b"\xff\xfe{}"])
@pytest.mark.parametrize("path", ["signup", "otp", "recover", "resend", "verify", "token?grant_type=password",
                                  "token?grant_type=pkce"])
def test_broken_json_is_a_4xx(path, content, server, app, http):
    response = http.post(f"{server.url}/auth/v1/{path}", content=content,
                         headers={"apikey": app.publishable_key, "Content-Type": "application/json",
                                  "X-Supabase-Api-Version": "2024-01-01"})
    assert 400 <= response.status_code < 500, f"{response.status_code}: {response.text[:300]}"
    assert_gotrue_error(response, response.status_code)


@pytest.mark.parametrize("path,depth", [("signup", 14000), ("otp", 14000), ("recover", 1800), ("resend", 1800),
                                        ("verify", 1800), ("token?grant_type=password", 1800)])
def test_deeply_nested_json_is_a_4xx_and_the_server_lives(path, depth, server, app, http):
    """Nesting within the body limit (the parser must not recurse itself to death)."""
    content = b'{"email":"nested@example.com","password":"Password-123","type":"signup","data":' + b"[" * depth \
        + b"]" * depth + b"}"
    response = http.post(f"{server.url}/auth/v1/{path}", content=content,
                         headers={"apikey": app.publishable_key, "Content-Type": "application/json",
                                  "X-Supabase-Api-Version": "2024-01-01"})
    assert 400 <= response.status_code < 500, f"{response.status_code}: {response.text[:300]}"
    assert_gotrue_error(response, response.status_code)
    assert http.get(f"{server.url}/health/ready").status_code == 200


@pytest.mark.parametrize("path", ["signup", "otp", "recover", "resend", "verify", "token?grant_type=password",
                                  "token?grant_type=pkce"])
def test_a_huge_body_is_refused(path, server, app, http):
    body = json.dumps({"email": "big@example.com", "password": "p" * 16, "data": {"x": "y" * 2_000_000}}).encode()
    response = http.post(f"{server.url}/auth/v1/{path}", content=body,
                         headers={"apikey": app.publishable_key, "Content-Type": "application/json",
                                  "X-Supabase-Api-Version": "2024-01-01"})
    assert response.status_code == 413, f"{response.status_code}: {response.text[:300]}"
    assert_gotrue_error(response, 413)


def test_bad_input_to_put_user_and_reauthenticate_is_a_4xx(server, app, http):
    _, guest = guest_client(server, app)
    token = guest.session.access_token
    bodies = [{"email": email} for email in BAD_EMAILS + WRONG_TYPES] + [
        {"password": 12345678},
        {"password": "x" * 73},
        {"password": "short"},
        {"password": new_password()},  # a guest without an address
        {"email": "valid@example.com", "code_challenge": "short", "code_challenge_method": "s256"},
        {"email": "valid@example.com", "password": new_password(), "nonce": 5},
        {"nonce": "123456", "password": new_password()},
    ]
    for body in bodies:
        response = auth_call(http, server, app, "PUT", "user", body, token=token)
        assert 400 <= response.status_code < 500, f"{body!r:.80}: {response.status_code} {response.text[:300]}"
        assert_gotrue_error(response, response.status_code)
    # A guest has no address to reauthenticate with.
    assert_gotrue_error(auth_call(http, server, app, "GET", "reauthenticate", token=token), 400, "validation_failed")
    user = http.get(f"{server.url}/auth/v1/user", headers={"apikey": app.publishable_key,
                                                          "Authorization": f"Bearer {token}"}).json()
    assert user["is_anonymous"] is True and "new_email" not in user


@pytest.mark.parametrize("query", [
    "token=abc&type=signup",
    "token=abc&type=signup&app=not-a-uuid",
    "type=signup&app=00000000-0000-0000-0000-000000000000",
    "token=abc&type=bogus&app={app}",
    "token=" + "t" * 300 + "&type=signup&app={app}",
    "token=abc%00def&type=signup&app={app}",
    "token=abc&type=signup&app={app}&redirect_to=http%3A%2F%2Flocalhost%3A3000%00evil",
    "token=abc&type=signup&app={app}&redirect_to=" + "h" * 3000,
    "token=abc&type=%00&app={app}",
])
def test_a_bad_link_is_a_4xx_or_an_error_redirect(query, server, app, http):
    response = http.get(f"{server.url}/auth/v1/verify?" + query.replace("{app}", app.app_id),
                        headers={"X-Supabase-Api-Version": "2024-01-01"}, follow_redirects=False)
    if response.status_code == 303:
        location = response.headers["location"]
        assert "access_token" not in location and "code=" not in location.split("#")[0], location
        assert fragment_of(location)["error_code"] == "otp_expired"
        assert location.startswith(SITE_URL), location
    else:
        assert 400 <= response.status_code < 500, f"{response.status_code}: {response.text[:300]}"
        assert_gotrue_error(response, response.status_code)


def test_a_put_user_refused_for_its_data_changes_nothing(server, app, email_database, http):
    """GoTrue decodes the whole body first: a `data` that is not an object is a 400 before the address is looked at.
    A refused request must not leave a pending change and a mail behind."""
    _, guest = guest_client(server, app)
    address = new_address("put-bad-data")
    response = auth_call(http, server, app, "PUT", "user", {"email": address, "data": "x"}, token=guest.session.access_token)
    assert 400 <= response.status_code < 500, response.text
    assert_gotrue_error(response, response.status_code)
    assert outbox_count(email_database, address) == 0, "a refused request queued a mail"
    user = http.get(f"{server.url}/auth/v1/user", headers={"apikey": app.publishable_key,
                                                          "Authorization": f"Bearer {guest.session.access_token}"}).json()
    assert "new_email" not in user, user


def test_weak_passwords_are_refused_with_reasons(server, email_database, mail_catcher, http):
    app = new_email_app(email_database, mail_catcher, "email-attacks-strict", password_min_length=10,
                        password_required_characters="abcdefghijklmnopqrstuvwxyz:0123456789")
    for password, reasons in (("short1", ["length"]), ("ABCDEFGHIJKL", ["characters"]), ("AB", ["length", "characters"]),
                              ("lettersonly", ["characters"])):
        address = new_address("weak")
        error = api_error(lambda: email_client(server, app).auth.sign_up({"email": address, "password": password}))
        assert type(error).__name__ == "AuthWeakPasswordError", error
        assert error.code == "weak_password" and error.status == 422 and error.reasons == reasons, (password, error)
        raw = auth_call(http, server, app, "POST", "signup", {"email": address, "password": password})
        body = assert_gotrue_error(raw, 422, "weak_password")
        assert body["weak_password"]["reasons"] == reasons
        assert user_count(email_database, app, address) == 0 and outbox_count(email_database, address) == 0
    # The same rules for a password change.
    address, good = new_address("strong"), "good-password-1"
    client = email_client(server, app)
    seq = mail_catcher.last_seq()
    client.auth.sign_up({"email": address, "password": good})
    _, code, _ = mailed(mail_catcher, address, seq)
    client.auth.verify_otp({"email": address, "token": code, "type": "signup"})
    error = api_error(lambda: client.auth.update_user({"password": "nodigitshere"}))
    assert getattr(error, "code", None) == "weak_password" and error.reasons == ["characters"], error


def test_codes_and_tokens_are_not_kept_in_the_clear(server, app, email_database, mail_catcher, http):
    address, password, user_id, _, code, link = signed_up(server, app, mail_catcher)
    token = link_query(link)["token"]
    wait_until(lambda: outbox_rows(email_database, address)[0]["erased"], what="the sent mail's payload erased")
    stored = sql(email_database, "select coalesce(string_agg(row_to_json(c)::text, ' '), '') from guestpass.email_codes as c "
                                 f"where c.user_id = '{user_id}'")
    assert stored and code not in re.findall(r"\d+", stored) and token not in stored
    outbox = sql(email_database, "select string_agg(row_to_json(o)::text, ' ') from guestpass.mail_outbox as o "
                                 f"where o.recipient = {quoted(address)}")
    assert token not in outbox and password not in outbox
    # Unconfirmed, the password waits in the sign-up code (it becomes the account's when that code confirms it).
    pending = sql(email_database, "select coalesce(c.password_hash, e.password_hash) from guestpass.email_credentials as c "
                                  "join guestpass.email_codes as e on e.user_id = c.user_id and e.purpose = 'signup' "
                                  f"where c.user_id = '{user_id}'")
    assert pending.startswith("$scrypt$") and password not in pending
    smtp = sql(email_database, f"select encode(smtp_password, 'escape') from guestpass.apps where id = '{app.app_id}'")
    assert SMTP_PASSWORD not in smtp


def test_no_secret_reaches_the_servers_log(server, app, email_database, mail_catcher, http):
    """A run through every kind of mail, then the whole log is searched for what it carried. (The session's log audit
    repeats this over every log.)"""
    secrets_: list[str] = [SMTP_PASSWORD]
    address, password, _, message, code, link = signed_up(server, app, mail_catcher)
    secrets_ += [password, code, link_query(link)["token"]]
    assert open_link(http, server, link).status_code == 303
    client = email_client(server, app)
    client.auth.sign_in_with_password({"email": address, "password": password})
    for kind in ("recover", "otp"):
        allow_next_mail(email_database, address)
        assert auth_call(http, server, app, "POST", kind, {"email": address}).status_code == 200
        message, code, link = mailed(mail_catcher, address, message.seq)
        secrets_ += [code, link_query(link)["token"]]
    assert verify(http, server, app, address, code, "magiclink").status_code == 200
    new = new_password()
    secrets_.append(new)
    client.auth.update_user({"password": new})
    guest, _ = guest_client(server, app)
    target = new_address("log-upgrade")
    seq = mail_catcher.last_seq()
    guest.auth.update_user({"email": target})
    _, code, link = mailed(mail_catcher, target, seq)
    secrets_ += [code, link_query(link)["token"]]
    guest.auth.verify_otp({"email": target, "token": code, "type": "email_change"})
    assert_no_secrets_in_log(server, secrets_)


def test_the_servers_log_holds_no_key_material(server, app, http):
    """No key as bytes: a service described whole at start (swift-service-lifecycle logs each service's description at
    debug level) would print the code key, the payload sealing key, the SMTP password key, the refresh-token key."""
    assert http.get(f"{server.url}/health/ready").status_code == 200
    log = server.log_path.read_text(errors="replace")
    leaked = sorted(set(re.findall(r"(\w*[Kk]ey): \[(?:\d{1,3}, ){15,}\d{1,3}\]", log)))
    assert not leaked, f"key bytes in {server.log_path.name}: {leaked}"


def test_per_client_limits_cut_off_code_and_password_guessing(email_servers, email_database, mail_catcher, http):
    """From one client address: at most N verifications, N password sign-ins and N mail requests per five minutes
    (here N = 3, on a server of its own trusting X-Forwarded-For, so the bucket is this test's alone)."""
    limited = email_servers.start("email-attack-limits", GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For",
                                  GUESTPASS_EMAIL_VERIFIES_PER_IP="3", GUESTPASS_PASSWORD_SIGNINS_PER_IP="3",
                                  GUESTPASS_EMAIL_SENDS_PER_IP="3")
    try:
        app = new_email_app(email_database, mail_catcher, "email-attacks-limits")
        client_ip = f"198.51.100.{secrets.randbelow(250) + 1}"
        headers = {"apikey": app.publishable_key, "X-Supabase-Api-Version": "2024-01-01", "X-Forwarded-For": client_ip}
        url = f"{limited.url}/auth/v1"
        address = new_address("limits")
        for n in range(3):
            sent = http.post(f"{url}/signup" if n == 0 else f"{url}/recover",
                             json={"email": address if n == 0 else new_address("limits"), "password": new_password()},
                             headers=headers)
            assert sent.status_code == 200, sent.text
        assert_gotrue_error(http.post(f"{url}/recover", json={"email": new_address("limits")}, headers=headers),
                            429, "over_request_rate_limit")
        _, code, _ = mailed(mail_catcher, address)
        for guess in wrong_codes(code, 3):
            assert_gotrue_error(http.post(f"{url}/verify", json={"email": address, "token": guess, "type": "signup"},
                                          headers=headers), 403, "otp_expired")
        cut_off = http.post(f"{url}/verify", json={"email": address, "token": code, "type": "signup"}, headers=headers)
        assert_gotrue_error(cut_off, 429, "over_request_rate_limit")
        assert int(cut_off.headers["retry-after"]) >= 1
        for _ in range(3):
            assert_gotrue_error(http.post(f"{url}/token?grant_type=password",
                                          json={"email": address, "password": "guess-123456"}, headers=headers),
                                400, "invalid_credentials")
        assert_gotrue_error(http.post(f"{url}/token?grant_type=password",
                                      json={"email": address, "password": "guess-123456"}, headers=headers),
                            429, "over_request_rate_limit")
        # Another client address is not held back.
        other = {**headers, "X-Forwarded-For": f"198.51.100.{(int(client_ip.rsplit('.', 1)[1]) % 250) + 2}"}
        assert http.post(f"{url}/verify", json={"email": address, "token": code, "type": "signup"},
                         headers=other).status_code == 200
    finally:
        limited.stop()


def test_the_apps_hourly_cap_stops_mail_to_many_addresses(server, email_database, mail_catcher, http):
    app = new_email_app(email_database, mail_catcher, "email-attacks-hourly", email_hourly_limit=2)
    for n in range(2):
        assert auth_call(http, server, app, "POST", "otp", {"email": new_address(f"hourly-{n}")}).status_code == 200
    third = new_address("hourly-third")
    assert_gotrue_error(auth_call(http, server, app, "POST", "otp", {"email": third}), 429, "over_email_send_rate_limit")
    assert outbox_count(email_database, third) == 0 and user_count(email_database, app, third) == 0


def test_an_edited_link_type_finds_nothing_and_spends_nothing(server, app, mail_catcher, http):
    address, _, user_id, _, _, link = signed_up(server, app, mail_catcher)
    for edited in ("recovery", "magiclink", "email_change"):
        opened = open_link(http, server, link, type=edited)
        assert opened.status_code == 303 and fragment_of(opened.headers["location"])["error_code"] == "otp_expired"
    opened = open_link(http, server, link)
    assert claims(fragment_of(opened.headers["location"])["access_token"])["sub"] == user_id


@pytest.mark.parametrize("order", ["squatter_first", "squatter_first_then_otp", "victim_first"])
def test_a_squatters_password_does_not_survive_the_owners_confirmation(order, server, app, email_database,
                                                                        mail_catcher):
    """Pre-account takeover: someone signs up with the victim's address and a password of theirs; they cannot read the
    mail, but the victim confirms the address (with the newest code in their inbox) and uses the account. The
    squatter's password must not open it then, whichever came first:

    - squatter_first: the squatter signs up, then the victim signs up (GoTrue keeps the first password: the hole);
    - squatter_first_then_otp: the squatter signs up, then the victim asks for a code (sign_in_with_otp);
    - victim_first: the victim signs up, then the squatter signs up again before the victim confirmed (a policy of
      "the last sign-up's password" would hand the account to the squatter).
    """
    victim = new_address("victim")
    squatter_password, victim_password = new_password(), new_password()
    first_password = victim_password if order == "victim_first" else squatter_password
    seq = mail_catcher.last_seq()
    email_client(server, app).auth.sign_up({"email": victim, "password": first_password})
    first, _, _ = mailed(mail_catcher, victim, seq)

    allow_next_mail(email_database, victim)
    if order == "squatter_first_then_otp":
        email_client(server, app).auth.sign_in_with_otp({"email": victim})
    else:
        second_password = squatter_password if order == "victim_first" else victim_password
        email_client(server, app).auth.sign_up({"email": victim, "password": second_password})
    _, code, _ = mailed(mail_catcher, victim, first.seq)
    owner = email_client(server, app).auth.verify_otp({"email": victim, "token": code, "type": "email"})
    assert owner.session is not None

    error = api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": victim, "password": squatter_password}))
    assert getattr(error, "code", None) == "invalid_credentials", "the squatter's password opens the victim's account"

def test_one_code_sent_at_once_by_many_opens_one_session(server, app, mail_catcher):
    address, _, user_id, _, code, _ = signed_up(server, app, mail_catcher)
    import httpx  # noqa: PLC0415
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    def attempt(_):
        with httpx.Client(timeout=15) as client:
            return client.post(f"{server.url}/auth/v1/verify", json={"email": address, "token": code, "type": "signup"},
                               headers={"apikey": app.publishable_key, "X-Supabase-Api-Version": "2024-01-01"})

    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(attempt, range(12)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [403] * 11, [(a.status_code, a.text[:100]) for a in answers]
    assert all(a.json()["code"] == "otp_expired" for a in answers if a.status_code == 403)


def test_many_sign_ups_of_one_address_at_once_make_one_user_and_one_mail(server, app, email_database, mail_catcher):
    address = new_address("concurrent")
    import httpx  # noqa: PLC0415
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    def attempt(n):
        with httpx.Client(timeout=30) as client:
            return client.post(f"{server.url}/auth/v1/signup", json={"email": address, "password": f"Password-{n:04d}x"},
                               headers={"apikey": app.publishable_key, "X-Supabase-Api-Version": "2024-01-01"})

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(attempt, range(10)))
    assert all(a.status_code == 200 for a in answers), [(a.status_code, a.text[:200]) for a in answers]
    ids = {a.json()["id"] for a in answers}
    assert len(ids) == 1, ids
    assert user_count(email_database, app, address) == 1
    assert outbox_count(email_database, address) == 1
    mailed(mail_catcher, address)


def test_a_logged_out_session_cannot_ask_for_an_address(server, app, email_database, http):
    client, guest = guest_client(server, app)
    token = guest.session.access_token
    assert http.post(f"{server.url}/auth/v1/logout", headers={"apikey": app.publishable_key,
                                                              "Authorization": f"Bearer {token}"}).status_code == 204
    address = new_address("logged-out")
    refused = auth_call(http, server, app, "PUT", "user", {"email": address}, token=token)
    assert_gotrue_error(refused, 403, "session_not_found")
    assert outbox_count(email_database, address) == 0


def test_an_account_without_a_password_is_not_opened_by_any(server, app, mail_catcher, http):
    client, guest = guest_client(server, app)
    address = new_address("no-password")
    seq = mail_catcher.last_seq()
    client.auth.update_user({"email": address})
    _, code, _ = mailed(mail_catcher, address, seq)
    client.auth.verify_otp({"email": address, "token": code, "type": "email_change"})
    for guess in ("", " ", "null", "undefined", "password"):
        response = auth_call(http, server, app, "POST", "token", {"email": address, "password": guess},
                             query={"grant_type": "password"})
        assert_gotrue_error(response, 400, "invalid_credentials")


def test_without_the_version_header_errors_still_carry_a_string_code(server, app, http):
    """Both SDKs always send X-Supabase-Api-Version; a client that does not gets the same body, unechoed."""
    response = auth_call(http, server, app, "POST", "signup", {"email": "not-an-email", "password": new_password()},
                         version=False)
    body = assert_gotrue_error(response, 400, "validation_failed", echoed=False)
    assert "x-supabase-api-version" not in response.headers and isinstance(body["code"], str)


def test_a_device_secret_in_sign_up_data_is_never_stored_answered_or_signed(server, app, email_database, mail_catcher,
                                                                            http):
    """README: the device id is a secret, only its SHA-256 is stored, and it never appears in tokens, responses or
    logs. An app that sends its usual `data: {device_id}` with an email sign-up (or a code request) must not get it
    copied into user_metadata: it would be answered, stored in the clear and signed into every access token."""
    from conftest import new_device_secret  # noqa: PLC0415

    secret = new_device_secret()
    address = new_address("device-data")
    seq = mail_catcher.last_seq()
    response = auth_call(http, server, app, "POST", "signup",
                         {"email": address, "password": new_password(), "data": {"device_id": secret, "nick": "x"}})
    if response.status_code != 200:
        assert_gotrue_error(response, 400)  # refusing it is fine too
        return
    assert secret not in response.text, "answered"
    _, code, _ = mailed(mail_catcher, address, seq)
    verified = verify(http, server, app, address, code)
    assert secret not in verified.text, "answered with the session"
    assert secret not in json.dumps(claims(verified.json()["access_token"])), "signed into the access token"
    stored = sql(email_database, f"select user_metadata::text from public.users where email = {quoted(address)}")
    assert secret not in stored, "stored in the clear"

    other = new_address("device-otp")
    sent = auth_call(http, server, app, "POST", "otp", {"email": other, "data": {"device_id": secret}})
    assert sent.status_code in (200, 400), sent.text
    stored = sql(email_database, f"select coalesce(user_metadata::text, '') from public.users where email = {quoted(other)}")
    assert secret not in stored, "stored in the clear by /otp"


def test_a_head_request_from_a_link_scanner_does_not_spend_the_link(server, app, mail_catcher, http):
    address, _, user_id, _, _, link = signed_up(server, app, mail_catcher)
    for method in ("HEAD", "OPTIONS"):
        probe = http.request(method, on_server(link, server), follow_redirects=False)
        assert probe.status_code != 303 and "access_token" not in probe.headers.get("location", ""), method
    opened = open_link(http, server, link)
    assert claims(fragment_of(opened.headers["location"])["access_token"])["sub"] == user_id


@pytest.mark.parametrize("how", ["killed", "expired", "dropped_then_resent"])
def test_a_secure_change_cannot_skip_the_current_address_by_spending_its_code(how, server, email_database, mail_catcher,
                                                                              http):
    """With secure change on, the current address must agree. Someone holding the user's session (and the new
    address) must not get round it by getting rid of the current address's code, then confirming the new address
    alone: killing it (5 wrong guesses at that address), waiting for it to expire, or having it dropped (a password
    change from the fresh session drops every code; the pending change stays, and a resend issues the new address's
    code only). (GoTrue has no per-code tries and its two codes share one expiry.)"""
    app = new_email_app(email_database, mail_catcher, f"email-attacks-secure-{how}", email_secure_change=True)
    old, password = new_address("secure-victim"), new_password()
    seq = mail_catcher.last_seq()
    email_client(server, app).auth.sign_up({"email": old, "password": password})
    first, code, _ = mailed(mail_catcher, old, seq)
    user_id = email_client(server, app).auth.verify_otp({"email": old, "token": code, "type": "signup"}).user.id
    thief = email_client(server, app)
    thief.auth.sign_in_with_password({"email": old, "password": password})

    new = new_address("secure-thief")
    allow_next_mail(email_database, old)
    seq = mail_catcher.last_seq()
    thief.auth.update_user({"email": new})
    _, new_code, _ = mailed(mail_catcher, new, seq)
    _, old_code, _ = mailed(mail_catcher, old, seq)
    if how == "killed":
        for guess in wrong_codes(old_code, 5):
            assert_gotrue_error(verify(http, server, app, old, guess, "email_change"), 403, "otp_expired")
    elif how == "expired":
        sql(email_database, "update guestpass.email_codes set expires_at = now() - interval '1 second' "
                            f"where user_id = '{user_id}' and purpose = 'email_change_current'")
    else:
        thief.auth.update_user({"password": new_password()})
        allow_next_mail(email_database, new)
        seq = mail_catcher.last_seq()
        resent = auth_call(http, server, app, "POST", "resend", {"type": "email_change", "email": new})
        assert resent.status_code == 200, resent.text
        if sql(email_database, f"select count(*) from guestpass.mail_outbox where recipient = {quoted(new)}") == "2":
            _, new_code, _ = mailed(mail_catcher, new, seq)
    answer = verify(http, server, app, new, new_code, "email_change")
    changed = answer.status_code == 200 and answer.json().get("user", answer.json()).get("email") == new
    assert not changed, "the change went through without the current address"
    stored = sql(email_database, f"select email from public.users where id = '{user_id}'")
    assert stored == old, "the account's address changed without the current address's consent"
