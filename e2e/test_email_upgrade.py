"""A guest becomes a permanent account by adding an email address, and stays the same user with every row it has.

As supabase-py does it (`sign_in_anonymously`, `update_user({"email"})`, `verify_otp(type="email_change")`, then
`update_user({"password"})`), in both of its flows; the mailed link in both flows (implicit: the session in the
redirect's fragment; PKCE: `?code=` traded by `exchange_code_for_session`); the mail itself crossing STARTTLS + AUTH
to the catcher. An address another user of the app holds is `email_exists` and nothing changes; another app is
another namespace. The raw wire shapes the SDKs depend on (a bare User from PUT /user, UTC `Z` timestamps, the
version header) are checked where the SDK would hide them.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

pytest.register_assert_rewrite("email_support")

from email_support import (
    SENDER,
    SENDER_NAME,
    SITE_URL,
    SMTP_USER,
    allow_next_mail,
    assert_api_error,
    auth_call,
    claims,
    configure_app,
    email_client,
    fragment_of,
    guest_client,
    link_query,
    mailed,
    new_address,
    new_email_app,
    new_password,
    open_link,
    outbox_count,
    query_of,
    sql,
)
from support import refresh

pytest_plugins = ("email_support",)

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
USER_TIMESTAMPS = ("created_at", "updated_at", "email_confirmed_at", "confirmed_at", "confirmation_sent_at",
                   "recovery_sent_at", "email_change_sent_at", "last_sign_in_at")


@pytest.fixture()
def server(email_server):
    """Here `server` is the email files' server, on their own database (email_support explains why)."""
    return email_server


@pytest.fixture()
def app(email_app):
    """This file's own app on that database, mailing through the session's catcher."""
    return email_app


def rows_of(client) -> dict:
    """What the guest has: its readings, quota and devices, read with the client's current session."""
    return {
        "readings": sorted((r["id"], r["kind"]) for r in client.rpc("list_readings", {}).execute().data),
        "quota": client.rpc("get_quota", {}).execute().data,
        "devices": sorted(d["device_id"] for d in client.rpc("list_devices", {}).execute().data),
    }


def assert_utc_timestamps(user: dict, identities: bool = False) -> None:
    """Every timestamp of a raw User (and of its identities, with `identities`) in Go's form: UTC, `T`, `Z`
    (supabase-swift misreads an offset and refuses a space)."""
    for key in USER_TIMESTAMPS:
        if user.get(key) is not None:
            assert TIMESTAMP.match(user[key]), f"{key}: {user[key]!r}"
    for identity in (user.get("identities") or []) if identities else []:
        for key in ("created_at", "updated_at", "last_sign_in_at"):
            if identity.get(key) is not None:
                assert TIMESTAMP.match(identity[key]), f"identities[].{key}: {identity[key]!r}"


@pytest.mark.parametrize("flow", ["implicit", "pkce"])
def test_a_guest_adds_an_address_by_code_and_stays_the_same_user(flow, server, app, mail_catcher, http):
    client, guest = guest_client(server, app, flow)
    guest_id = guest.user.id
    guest_claims = claims(guest.session.access_token)
    client.rpc("add_reading", {"p_kind": "palm"}).execute()
    client.rpc("add_reading", {"p_kind": "coffee", "p_content": {"cup": 1}}).execute()
    before = rows_of(client)
    assert len(before["readings"]) == 2 and len(before["devices"]) == 1
    assert before["quota"]["quota_remaining"] == before["quota"]["daily_limit"] - 2, before["quota"]

    address = new_address("upgrade")
    seq = mail_catcher.last_seq()
    pending = client.auth.update_user({"email": address}).user
    assert pending.id == guest_id
    assert pending.new_email == address
    assert pending.is_anonymous is True
    assert not pending.email
    assert not pending.identities
    assert pending.email_change_sent_at is not None

    message, code, link = mailed(mail_catcher, address, seq)
    assert message.entry["tls"] is True and message.entry["auth_user"] == SMTP_USER, message.entry
    assert message.mail_from == SENDER and message.rcpt_tos == [address]
    assert SENDER_NAME in str(message.headers["From"]) and address in str(message.headers["To"])
    assert message.subject == "Confirm your new email address"
    assert code and re.fullmatch(r"\d{6}", code), message.text
    assert link and urlsplit(link).path == "/auth/v1/verify"
    assert link_query(link)["type"] == "email_change" and link_query(link)["app"] == app.app_id
    assert code not in link

    verified = client.auth.verify_otp({"email": address, "token": code, "type": "email_change"})
    session, user = verified.session, verified.user
    assert session is not None
    assert user.id == guest_id
    assert user.is_anonymous is False
    assert user.email == address
    assert user.new_email is None
    assert user.email_confirmed_at is not None
    assert [(i.provider, i.id, i.user_id) for i in user.identities] == [("email", guest_id, guest_id)]
    assert user.identities[0].identity_data["email"] == address
    assert user.identities[0].identity_data["email_verified"] is True
    assert "email" in user.app_metadata.get("providers", []) and user.user_metadata.get("email_verified") is True
    token = claims(session.access_token)
    assert token["sub"] == guest_id and token["is_anonymous"] is False and token["email"] == address
    assert [a["method"] for a in token["amr"]] == ["otp"]
    assert token["session_id"] != guest_claims["session_id"], "a new session"
    assert token["device_id"] == guest_claims["device_id"], "the session keeps the device that asked for the change"

    # Every row is still the user's, read with the new session.
    assert rows_of(client) == before
    assert client.auth.get_user().user.is_anonymous is False

    # The guest's own session goes on, now as a permanent user (claims are built from the user row).
    rotated = refresh(http, server, app, guest.session.refresh_token)
    assert rotated.status_code == 200, rotated.text
    assert claims(rotated.json()["access_token"])["is_anonymous"] is False

    # A password, then a password sign-in from anywhere reaches the same user.
    password = new_password()
    assert client.auth.update_user({"password": password}).user.id == guest_id
    other = email_client(server, app, flow)
    signed_in = other.auth.sign_in_with_password({"email": address, "password": password})
    assert signed_in.user.id == guest_id
    assert [a["method"] for a in claims(signed_in.session.access_token)["amr"]] == ["password"]
    assert rows_of(other)["readings"] == before["readings"]

    # The password change ended every other session of the user: the guest's (rotated) one included.
    ended = refresh(http, server, app, rotated.json()["refresh_token"])
    assert ended.status_code in (400, 403), ended.text
    assert ended.json()["code"] in ("session_not_found", "refresh_token_not_found"), ended.text
    assert client.auth.get_user().user.id == guest_id, "the session that changed it goes on"


def test_the_raw_wire_answers_are_a_bare_user_then_a_session(server, app, mail_catcher, http):
    """What supabase-swift decodes: PUT /user answers a bare User (never a Session) with `new_email`; POST /verify a
    Session with integer `expires_in`/`expires_at`; every timestamp UTC with `Z`; the version header echoed."""
    _, guest = guest_client(server, app)
    address = new_address("wire")
    seq = mail_catcher.last_seq()
    put = auth_call(http, server, app, "PUT", "user", {"email": address.upper()}, token=guest.session.access_token)
    assert put.status_code == 200, put.text
    user = put.json()
    assert "access_token" not in user and user["id"] == guest.user.id
    assert user["new_email"] == address, "the address is kept lower-cased"
    assert user["is_anonymous"] is True and user["aud"] == "authenticated"
    assert isinstance(user["app_metadata"], dict) and isinstance(user["user_metadata"], dict)
    assert_utc_timestamps(user)

    _, code, _ = mailed(mail_catcher, address, seq)
    verify = auth_call(http, server, app, "POST", "verify",
                       {"email": address, "token": code, "type": "email_change",
                        "gotrue_meta_security": {"captcha_token": None}})
    assert verify.status_code == 200, verify.text
    session = verify.json()
    assert session["token_type"] == "bearer" and isinstance(session["refresh_token"], str)
    assert isinstance(session["expires_in"], int) and isinstance(session["expires_at"], int)
    assert session["user"]["id"] == guest.user.id and session["user"]["is_anonymous"] is False
    assert session["user"]["email"] == address and "new_email" not in session["user"]
    identity = session["user"]["identities"][0]
    assert {"identity_id", "id", "user_id", "identity_data", "provider", "created_at"} <= identity.keys()
    assert_utc_timestamps(session["user"])


def test_the_email_identitys_timestamps_are_utc_with_z(server, app, mail_catcher, http):
    """The reference's rule 7 for the identities too: `2024-04-01T17:05:13.013312Z`, not PostgreSQL's `+00:00`."""
    _, guest = guest_client(server, app)
    address = new_address("identity-time")
    seq = mail_catcher.last_seq()
    assert auth_call(http, server, app, "PUT", "user", {"email": address}, token=guest.session.access_token).status_code == 200
    _, code, _ = mailed(mail_catcher, address, seq)
    verify = auth_call(http, server, app, "POST", "verify", {"email": address, "token": code, "type": "email_change"})
    assert verify.status_code == 200, verify.text
    assert_utc_timestamps(verify.json()["user"], identities=True)


@pytest.mark.parametrize("flow", ["implicit", "pkce"])
def test_the_mailed_link_upgrades_the_guest(flow, server, app, mail_catcher, http):
    client, guest = guest_client(server, app, flow)
    client.rpc("add_reading", {"p_kind": "face"}).execute()
    address = new_address(f"link-{flow}")
    seq = mail_catcher.last_seq()
    client.auth.update_user({"email": address}, {"email_redirect_to": f"{SITE_URL}/welcome"})
    _, code, link = mailed(mail_catcher, address, seq)
    assert link_query(link)["redirect_to"] == f"{SITE_URL}/welcome"

    opened = open_link(http, server, link)
    assert opened.status_code == 303, opened.text
    location = opened.headers["location"]
    assert opened.headers.get("cache-control") == "no-store"
    if flow == "implicit":
        assert location.startswith(f"{SITE_URL}/welcome#"), location
        fragment = fragment_of(location)
        assert fragment["token_type"] == "bearer" and fragment["type"] == "email_change"
        assert int(fragment["expires_in"]) > 0 and int(fragment["expires_at"]) > 0
        token = claims(fragment["access_token"])
        assert token["sub"] == guest.user.id and token["is_anonymous"] is False and token["email"] == address
        assert [a["method"] for a in token["amr"]] == ["email_change"]
        assert token["device_id"] == claims(guest.session.access_token)["device_id"], "the guest's device goes on"
        # The fragment's refresh token is a working session of the same user.
        refreshed = refresh(http, server, app, fragment["refresh_token"])
        assert refreshed.status_code == 200 and refreshed.json()["user"]["id"] == guest.user.id, refreshed.text
        client.auth.set_session(fragment["access_token"], fragment["refresh_token"])
    else:
        assert location.startswith(f"{SITE_URL}/welcome?code="), location
        assert "#" not in location and "access_token" not in location
        auth_code = query_of(location)["code"]
        exchanged = client.auth.exchange_code_for_session({"auth_code": auth_code})
        assert exchanged.user.id == guest.user.id and exchanged.user.is_anonymous is False
        assert exchanged.user.email == address
        assert [a["method"] for a in claims(exchanged.session.access_token)["amr"]] == ["email_change"]
        assert claims(exchanged.session.access_token)["device_id"] == claims(guest.session.access_token)["device_id"]
        # An authorization code is single use.
        again = auth_call(http, server, app, "POST", "token", {"auth_code": auth_code, "code_verifier": "v" * 43},
                          query={"grant_type": "pkce"})
        assert again.status_code in (400, 403, 404), again.text
        assert again.json()["code"] in ("flow_state_not_found", "bad_code_verifier"), again.text
    assert [r["kind"] for r in client.rpc("list_readings", {}).execute().data] == ["face"]

    # The link was single use, and its code went with it.
    reopened = open_link(http, server, link)
    assert reopened.status_code == 303
    refused = fragment_of(reopened.headers["location"])
    assert refused["error"] == "access_denied" and refused["error_code"] == "otp_expired", reopened.headers["location"]
    assert_api_error(lambda: email_client(server, app).auth.verify_otp(
        {"email": address, "token": code, "type": "email_change"}), 403, "otp_expired")


def test_an_address_taken_in_the_app_is_email_exists_and_the_guest_is_untouched(
        server, app, other_email_app, email_database, mail_catcher):
    # One address held by an unconfirmed sign-up, one by a confirmed account (a guest that upgraded).
    unconfirmed = new_address("taken-unconfirmed")
    email_client(server, app).auth.sign_up({"email": unconfirmed, "password": new_password()})
    confirmed = new_address("taken-confirmed")
    owner, _ = guest_client(server, app)
    seq = mail_catcher.last_seq()
    owner.auth.update_user({"email": confirmed})
    _, code, _ = mailed(mail_catcher, confirmed, seq)
    owner.auth.verify_otp({"email": confirmed, "token": code, "type": "email_change"})

    client, guest = guest_client(server, app)
    client.rpc("add_reading", {"p_kind": "palm"}).execute()
    for taken in (unconfirmed, confirmed, f"  {confirmed.upper()} "):
        mails_before = outbox_count(email_database, taken.strip())
        error = assert_api_error(lambda: client.auth.update_user({"email": taken}), 422, "email_exists")
        assert "already been registered" in error.message
        assert outbox_count(email_database, taken.strip()) == mails_before, "nothing is mailed"
    user = client.auth.get_user().user
    assert user.id == guest.user.id and user.is_anonymous is True and not user.email and user.new_email is None
    assert sql(email_database, f"select count(*) from guestpass.email_codes where user_id = '{guest.user.id}'") == "0"
    assert [r["kind"] for r in client.rpc("list_readings", {}).execute().data] == ["palm"]

    # Another app is another namespace: the same address is free there.
    there, there_guest = guest_client(server, other_email_app)
    seq = mail_catcher.last_seq()
    assert there.auth.update_user({"email": confirmed}).user.new_email == confirmed
    _, code, _ = mailed(mail_catcher, confirmed, seq)
    upgraded = there.auth.verify_otp({"email": confirmed, "token": code, "type": "email_change"})
    assert upgraded.user.id == there_guest.user.id and upgraded.user.is_anonymous is False


def test_a_guest_may_set_a_password_with_the_address_and_it_works_once_confirmed(server, app, mail_catcher):
    client, guest = guest_client(server, app)
    address = new_address("with-password")
    password = new_password()
    seq = mail_catcher.last_seq()
    pending = client.auth.update_user({"email": address, "password": password}).user
    assert pending.is_anonymous is True and pending.new_email == address

    # Not before the address is proven: a password sign-in looks the account up by its confirmed address.
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": password}), 400, "invalid_credentials")

    _, code, _ = mailed(mail_catcher, address, seq)
    client.auth.verify_otp({"email": address, "token": code, "type": "email_change"})
    signed_in = email_client(server, app).auth.sign_in_with_password({"email": address, "password": password})
    assert signed_in.user.id == guest.user.id and signed_in.user.is_anonymous is False


def test_a_guest_cannot_set_a_password_without_an_address(server, app, http):
    client, guest = guest_client(server, app)
    error = assert_api_error(lambda: client.auth.update_user({"password": new_password()}), 422, "validation_failed")
    assert "anonymous" in error.message.lower()
    assert client.auth.get_user().user.is_anonymous is True


def test_a_guests_pending_change_can_be_resent_and_only_the_new_code_works(server, app, email_database, mail_catcher):
    """GoTrue looks the user up by its current address (a guest has none) and sends nothing; GuestPass resends the
    pending change's code to the new address."""
    client, guest = guest_client(server, app)
    address = new_address("resend-guest")
    seq = mail_catcher.last_seq()
    client.auth.update_user({"email": address})
    first, old_code, _ = mailed(mail_catcher, address, seq)

    # Within the interval: throttled, and nothing is queued.
    assert_api_error(lambda: email_client(server, app).auth.resend({"type": "email_change", "email": address}),
                     429, "over_email_send_rate_limit")
    assert outbox_count(email_database, address) == 1

    allow_next_mail(email_database, address)
    assert email_client(server, app).auth.resend({"type": "email_change", "email": address}).user is None
    second, new_code, _ = mailed(mail_catcher, address, first.seq)
    assert second.subject == "Confirm your new email address"
    if new_code != old_code:
        assert_api_error(lambda: email_client(server, app).auth.verify_otp(
            {"email": address, "token": old_code, "type": "email_change"}), 403, "otp_expired")
    verified = client.auth.verify_otp({"email": address, "token": new_code, "type": "email_change"})
    assert verified.user.id == guest.user.id and verified.user.is_anonymous is False


def test_with_autoconfirm_a_guests_address_is_taken_at_once_without_mail(
        server, email_database, mail_catcher, http):
    app = new_email_app(email_database, mail_catcher, "email-upgrade-autoconfirm", email_autoconfirm=True)
    client, guest = guest_client(server, app)
    address = new_address("autoconfirm-guest")
    user = client.auth.update_user({"email": address}).user
    assert user.id == guest.user.id
    assert user.email == address and user.is_anonymous is False and user.email_confirmed_at is not None
    assert user.new_email is None
    assert outbox_count(email_database, address) == 0
    # The token in hand still says anonymous (GoTrue too: no new session); a refresh reads the user row.
    refreshed = refresh(http, server, app, guest.session.refresh_token)
    assert refreshed.status_code == 200, refreshed.text
    assert claims(refreshed.json()["access_token"])["is_anonymous"] is False
    # The address is taken for the other guests of the app.
    other, _ = guest_client(server, app)
    assert_api_error(lambda: other.auth.update_user({"email": address}), 422, "email_exists")


def test_an_address_the_app_does_not_allow_as_redirect_leads_to_the_site_url(server, app, mail_catcher, http):
    client, guest = guest_client(server, app, "implicit")
    address = new_address("redirect")
    seq = mail_catcher.last_seq()
    client.auth.update_user({"email": address}, {"email_redirect_to": "https://evil.example/steal"})
    _, _, link = mailed(mail_catcher, address, seq)
    assert link_query(link).get("redirect_to", SITE_URL) == SITE_URL
    # Editing the link's redirect_to changes nothing: the code remembers where it leads.
    opened = open_link(http, server, link, redirect_to="https://evil.example/steal")
    assert opened.status_code == 303
    location = opened.headers["location"]
    assert location.startswith(SITE_URL) and "evil.example" not in location.split("#")[0], location
    assert claims(fragment_of(location)["access_token"])["sub"] == guest.user.id


def test_configure_refuses_an_otp_length_out_of_range(email_database, app):
    with pytest.raises(RuntimeError):
        configure_app(email_database, app, email_otp_length=5)


def test_after_email_exists_the_guest_signs_in_to_the_account_and_merges_into_it(server, app, mail_catcher, http):
    """The way on from email_exists: sign in to the account that holds the address, then merge the guest into it
    (`POST /v1/account/merge` with the account's session and the guest's refresh token)."""
    address, password = new_address("merge"), new_password()
    seq = mail_catcher.last_seq()
    email_client(server, app).auth.sign_up({"email": address, "password": password})
    _, code, _ = mailed(mail_catcher, address, seq)
    account_id = email_client(server, app).auth.verify_otp({"email": address, "token": code, "type": "signup"}).user.id

    client, guest = guest_client(server, app)
    client.rpc("add_reading", {"p_kind": "coffee"}).execute()
    assert_api_error(lambda: client.auth.update_user({"email": address}), 422, "email_exists")

    account = email_client(server, app)
    session = account.auth.sign_in_with_password({"email": address, "password": password}).session
    merged = http.post(f"{server.url}/v1/account/merge", json={"guest_refresh_token": guest.session.refresh_token},
                       headers={"apikey": app.publishable_key, "Authorization": f"Bearer {session.access_token}"})
    assert merged.status_code == 200, merged.text
    assert merged.json()["user_id"] == account_id and merged.json()["merged_user_id"] == guest.user.id
    assert [r["kind"] for r in account.rpc("list_readings", {}).execute().data] == ["coffee"]


def test_two_guests_asking_for_one_address_the_first_to_confirm_gets_it(server, app, email_database, mail_catcher, http):
    address = new_address("race")
    first, first_guest = guest_client(server, app)
    second, second_guest = guest_client(server, app)
    seq = mail_catcher.last_seq()
    first.auth.update_user({"email": address})
    message, first_code, _ = mailed(mail_catcher, address, seq)
    # Both may ask (a pending change holds nothing); the interval applies to the address.
    allow_next_mail(email_database, address)
    second.auth.update_user({"email": address})
    _, second_code, _ = mailed(mail_catcher, address, message.seq)

    won = second.auth.verify_otp({"email": address, "token": second_code, "type": "email_change"})
    assert won.user.id == second_guest.user.id and won.user.email == address
    lost = auth_call(http, server, app, "POST", "verify", {"email": address, "token": first_code, "type": "email_change"})
    assert lost.status_code in (403, 422), lost.text
    assert lost.json()["code"] in ("email_exists", "otp_expired"), lost.text
    user = first.auth.get_user().user
    assert user.id == first_guest.user.id and user.is_anonymous is True and not user.email



@pytest.mark.parametrize("method", ["s256", "S256"])
def test_the_swift_clients_pkce_upgrade_on_the_wire(method, server, app, mail_catcher, http):
    """supabase-swift's default flow, as bytes: PUT /user with `code_challenge` (base64url SHA-256 of the verifier) and
    `code_challenge_method` (it sends lower case; upper case is accepted too), the link answers `?code=`, and
    POST /token?grant_type=pkce {auth_code, code_verifier} opens the session."""
    import base64  # noqa: PLC0415
    import hashlib  # noqa: PLC0415
    import secrets  # noqa: PLC0415

    _, guest = guest_client(server, app)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    address = new_address("swift-pkce")
    seq = mail_catcher.last_seq()
    put = auth_call(http, server, app, "PUT", "user",
                    {"email": address, "code_challenge": challenge, "code_challenge_method": method},
                    token=guest.session.access_token, query={"redirect_to": "myapp://callback"})
    assert put.status_code == 200 and put.json()["new_email"] == address, put.text
    _, code, link = mailed(mail_catcher, address, seq)
    opened = open_link(http, server, link)
    assert opened.status_code == 303 and opened.headers["location"].startswith("myapp://callback?code="), opened.headers
    auth_code = query_of(opened.headers["location"])["code"]
    exchanged = auth_call(http, server, app, "POST", "token", {"auth_code": auth_code, "code_verifier": verifier},
                          query={"grant_type": "pkce"})
    assert exchanged.status_code == 200, exchanged.text
    body = exchanged.json()
    assert body["user"]["id"] == guest.user.id and body["user"]["is_anonymous"] is False
    assert isinstance(body["expires_at"], int) and body["token_type"] == "bearer"
    # A code issued under PKCE still verifies by POST /verify with email and code: here it was spent by the link.
    assert auth_call(http, server, app, "POST", "verify",
                     {"email": address, "token": code, "type": "email_change"}).status_code == 403


def test_a_pkce_code_verifies_by_post_too(server, app, mail_catcher, http):
    """Reference rule 10: OTPs issued under PKCE verify via POST /verify with email + token."""
    client, guest = guest_client(server, app, "pkce")
    address = new_address("pkce-otp")
    seq = mail_catcher.last_seq()
    client.auth.update_user({"email": address})
    _, code, _ = mailed(mail_catcher, address, seq)
    verified = client.auth.verify_otp({"email": address, "token": code, "type": "email_change"})
    assert verified.session is not None and verified.user.id == guest.user.id
