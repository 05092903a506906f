"""Email accounts as supabase-py uses them: sign-up with a confirmation by code (type `signup` or `email`) or by link,
password sign-in and its refusals, autoconfirm, one-time-code sign-in (code and magic link; `should_create_user`),
recovery, resend (sign-up and email change), reauthentication before a password change, a secure email change
confirmed by both addresses, and a password change ending the user's other sessions.
"""

from __future__ import annotations

import json
import re

import pytest

pytest.register_assert_rewrite("email_support")

from email_support import (  # noqa: E402
    SITE_URL,
    allow_next_mail,
    assert_api_error,
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
    open_link,
    outbox_count,
    query_of,
    quoted,
    sql,
    user_count,
)
from support import refresh  # noqa: E402

pytest_plugins = ("email_support",)


@pytest.fixture()
def server(email_server):
    """Here `server` is the email files' server, on their own database (email_support explains why)."""
    return email_server


@pytest.fixture()
def app(email_app):
    """This file's own app on that database, mailing through the session's catcher."""
    return email_app


def methods(session) -> list[str]:
    return [a["method"] for a in claims(session.access_token)["amr"]]


def confirmed_account(server, app, catcher, address: str | None = None, password: str | None = None):
    """A confirmed account (sign-up, then the mailed code): (address, password, user id, the seq of its mail)."""
    address = address or new_address("account")
    password = password or new_password()
    seq = catcher.last_seq()
    email_client(server, app).auth.sign_up({"email": address, "password": password})
    message, code, _ = mailed(catcher, address, seq)
    verified = email_client(server, app).auth.verify_otp({"email": address, "token": code, "type": "signup"})
    return address, password, verified.user.id, message.seq


@pytest.mark.parametrize("verify_type", ["signup", "email"])
def test_sign_up_mails_a_code_that_confirms_and_signs_in(verify_type, server, app, mail_catcher):
    address, password = new_address(f"signup-{verify_type}"), new_password()
    seq = mail_catcher.last_seq()
    client = email_client(server, app)
    signed_up = client.auth.sign_up({"email": address, "password": password, "options": {"data": {"nick": "Ada"}}})
    assert signed_up.session is None
    user = signed_up.user
    assert user.email == address and user.email_confirmed_at is None and user.is_anonymous is False
    assert user.confirmation_sent_at is not None and user.user_metadata.get("nick") == "Ada"
    assert [(i.provider, i.id) for i in user.identities] == [("email", user.id)]

    message, code, link = mailed(mail_catcher, address, seq)
    assert message.subject == "Confirm your email address" and re.fullmatch(r"\d{6}", code)
    assert link_query(link)["type"] == "signup"

    verified = client.auth.verify_otp({"email": address, "token": code, "type": verify_type})
    assert verified.session is not None and verified.user.id == user.id
    assert verified.user.email_confirmed_at is not None and methods(verified.session) == ["otp"]
    assert verified.user.identities[0].identity_data["email_verified"] is True

    signed_in = email_client(server, app).auth.sign_in_with_password({"email": address.upper(), "password": password})
    assert signed_in.user.id == user.id and methods(signed_in.session) == ["password"]


@pytest.mark.parametrize("flow", ["implicit", "pkce"])
def test_the_sign_up_link_confirms(flow, server, app, mail_catcher, http):
    address, password = new_address(f"signup-link-{flow}"), new_password()
    seq = mail_catcher.last_seq()
    client = email_client(server, app, flow)
    user = client.auth.sign_up({"email": address, "password": password,
                                "options": {"email_redirect_to": "myapp://callback"}}).user
    _, _, link = mailed(mail_catcher, address, seq)
    assert link_query(link)["redirect_to"] == "myapp://callback"
    opened = open_link(http, server, link)
    assert opened.status_code == 303, opened.text
    location = opened.headers["location"]
    if flow == "implicit":
        assert location.startswith("myapp://callback#"), location
        fragment = fragment_of(location)
        assert claims(fragment["access_token"])["sub"] == user.id and fragment["type"] == "signup"
    else:
        assert location.startswith("myapp://callback?code="), location
        session = client.auth.exchange_code_for_session({"auth_code": query_of(location)["code"]})
        assert session.user.id == user.id and session.user.email_confirmed_at is not None
    assert email_client(server, app).auth.sign_in_with_password({"email": address, "password": password}).user.id == user.id


def test_password_sign_in_refusals(server, app, mail_catcher, http):
    address, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    client = email_client(server, app)
    wrong = assert_api_error(lambda: client.auth.sign_in_with_password({"email": address, "password": password + "x"}),
                             400, "invalid_credentials")
    assert wrong.message == "Invalid login credentials"
    assert_api_error(lambda: client.auth.sign_in_with_password({"email": new_address("nobody"), "password": password}),
                     400, "invalid_credentials")

    # Unconfirmed: email_not_confirmed, but only after the right password.
    pending, pending_password = new_address("unconfirmed"), new_password()
    client.auth.sign_up({"email": pending, "password": pending_password})
    assert_api_error(lambda: client.auth.sign_in_with_password({"email": pending, "password": pending_password}),
                     400, "email_not_confirmed")
    assert_api_error(lambda: client.auth.sign_in_with_password({"email": pending, "password": pending_password + "x"}),
                     400, "invalid_credentials")

    # The wire: identical bodies for an unknown address and a wrong password.
    unknown = auth_call(http, server, app, "POST", "token", {"email": new_address("nobody"), "password": password},
                        query={"grant_type": "password"})
    mistaken = auth_call(http, server, app, "POST", "token", {"email": address, "password": "wrong-password"},
                         query={"grant_type": "password"})
    assert unknown.status_code == mistaken.status_code == 400
    assert unknown.json() == mistaken.json()


def test_autoconfirm_signs_up_with_a_session_and_no_mail(server, email_database, mail_catcher):
    app = new_email_app(email_database, mail_catcher, "email-accounts-autoconfirm", email_autoconfirm=True)
    address, password = new_address("autoconfirm"), new_password()
    signed_up = email_client(server, app).auth.sign_up({"email": address, "password": password})
    assert signed_up.session is not None and signed_up.user.email_confirmed_at is not None
    assert methods(signed_up.session) == ["password"]
    assert outbox_count(email_database, address) == 0
    assert_api_error(lambda: email_client(server, app).auth.sign_up({"email": address, "password": new_password()}),
                     422, "user_already_exists")
    assert email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": password}).user.id == signed_up.user.id


def test_sign_in_with_otp_mails_a_code_and_a_magic_link(server, app, email_database, mail_catcher, http):
    address, _, user_id, _ = confirmed_account(server, app, mail_catcher)
    allow_next_mail(email_database, address)
    seq = mail_catcher.last_seq()
    answer = email_client(server, app).auth.sign_in_with_otp({"email": address})
    assert answer.user is None and answer.session is None
    message, code, link = mailed(mail_catcher, address, seq)
    assert message.subject == "Your sign-in link" and link_query(link)["type"] == "magiclink"
    signed_in = email_client(server, app).auth.verify_otp({"email": address, "token": code, "type": "magiclink"})
    assert signed_in.user.id == user_id and methods(signed_in.session) == ["otp"]

    # Type `email` takes a magic-link code too; and the link signs in (implicit: the session in the fragment).
    allow_next_mail(email_database, address)
    email_client(server, app, "implicit").auth.sign_in_with_otp({"email": address})
    message, code, _ = mailed(mail_catcher, address, message.seq)
    assert email_client(server, app).auth.verify_otp({"email": address, "token": code, "type": "email"}).user.id == user_id

    allow_next_mail(email_database, address)
    email_client(server, app, "implicit").auth.sign_in_with_otp({"email": address})
    _, _, link = mailed(mail_catcher, address, message.seq)
    opened = open_link(http, server, link)
    assert opened.status_code == 303 and opened.headers["location"].startswith(SITE_URL + "#"), opened.headers
    token = claims(fragment_of(opened.headers["location"])["access_token"])
    assert token["sub"] == user_id and [a["method"] for a in token["amr"]] == ["magiclink"]


def test_sign_in_with_otp_for_a_new_address_signs_up(server, app, email_database, mail_catcher):
    address = new_address("otp-new")
    seq = mail_catcher.last_seq()
    email_client(server, app).auth.sign_in_with_otp({"email": address, "options": {"data": {"plan": "free"}}})
    message, code, _ = mailed(mail_catcher, address, seq)
    # A new address gets the sign-up confirmation, so `magiclink` does not take its code (GoTrue too).
    assert message.subject == "Confirm your email address"
    client = email_client(server, app)
    assert_api_error(lambda: client.auth.verify_otp({"email": address, "token": code, "type": "magiclink"}),
                     403, "otp_expired")
    verified = client.auth.verify_otp({"email": address, "token": code, "type": "email"})
    assert verified.user.email == address and verified.user.user_metadata.get("plan") == "free"
    assert user_count(email_database, app, address) == 1


def test_sign_in_with_otp_without_creating_users_refuses_an_unknown_address(server, app, email_database):
    address = new_address("otp-unknown")
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_otp(
        {"email": address, "options": {"should_create_user": False}}), 422, "otp_disabled")
    assert user_count(email_database, app, address) == 0
    assert outbox_count(email_database, address) == 0


@pytest.mark.parametrize("flow", ["implicit", "pkce"])
def test_recovery_by_code_then_a_new_password(flow, server, app, email_database, mail_catcher, http):
    address, old_password, user_id, _ = confirmed_account(server, app, mail_catcher)
    other_session = email_client(server, app).auth.sign_in_with_password({"email": address, "password": old_password})
    allow_next_mail(email_database, address)
    seq = mail_catcher.last_seq()
    client = email_client(server, app, flow)
    assert client.auth.reset_password_for_email(address) is None
    message, code, link = mailed(mail_catcher, address, seq)
    assert message.subject == "Reset your password" and link_query(link)["type"] == "recovery"

    events = []
    client.auth.on_auth_state_change(lambda event, session: events.append(event))
    recovered = client.auth.verify_otp({"email": address, "token": code, "type": "recovery"})
    assert recovered.user.id == user_id and methods(recovered.session) == ["otp"]
    assert "PASSWORD_RECOVERY" in events

    new = new_password()
    assert client.auth.update_user({"password": new}).user.id == user_id
    assert email_client(server, app).auth.sign_in_with_password({"email": address, "password": new}).user.id == user_id
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": old_password}), 400, "invalid_credentials")
    # The password change ended the other session.
    assert refresh(http, server, app, other_session.session.refresh_token).status_code in (400, 403)


def test_the_recovery_link_under_pkce_trades_for_a_session(server, app, email_database, mail_catcher, http):
    address, _, user_id, _ = confirmed_account(server, app, mail_catcher)
    allow_next_mail(email_database, address)
    seq = mail_catcher.last_seq()
    client = email_client(server, app, "pkce")
    client.auth.reset_password_for_email(address, {"redirect_to": f"{SITE_URL}/reset"})
    _, _, link = mailed(mail_catcher, address, seq)
    opened = open_link(http, server, link)
    assert opened.status_code == 303 and opened.headers["location"].startswith(f"{SITE_URL}/reset?code="), opened.headers
    events = []
    client.auth.on_auth_state_change(lambda event, session: events.append(event))
    session = client.auth.exchange_code_for_session({"auth_code": query_of(opened.headers["location"])["code"]})
    assert session.user.id == user_id and "PASSWORD_RECOVERY" in events
    assert [a["method"] for a in claims(session.session.access_token)["amr"]] == ["recovery"]


def test_resend_signup_replaces_the_code(server, app, email_database, mail_catcher):
    address, password = new_address("resend-signup"), new_password()
    seq = mail_catcher.last_seq()
    client = email_client(server, app)
    client.auth.sign_up({"email": address, "password": password})
    first, old_code, _ = mailed(mail_catcher, address, seq)
    assert_api_error(lambda: client.auth.resend({"type": "signup", "email": address}), 429, "over_email_send_rate_limit")

    allow_next_mail(email_database, address)
    assert client.auth.resend({"type": "signup", "email": address}).user is None
    second, new_code, _ = mailed(mail_catcher, address, first.seq)
    assert second.subject == "Confirm your email address"
    if new_code != old_code:
        assert_api_error(lambda: client.auth.verify_otp({"email": address, "token": old_code, "type": "signup"}),
                         403, "otp_expired")
    assert client.auth.verify_otp({"email": address, "token": new_code, "type": "signup"}).session is not None

    # Confirmed now: a resend answers the same and sends nothing.
    allow_next_mail(email_database, address)
    before = outbox_count(email_database, address)
    assert client.auth.resend({"type": "signup", "email": address}).user is None
    assert client.auth.resend({"type": "signup", "email": new_address("resend-unknown")}).user is None
    assert outbox_count(email_database, address) == before


def test_a_permanent_users_email_change_can_be_resent(server, app, email_database, mail_catcher):
    address, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    client = email_client(server, app)
    client.auth.sign_in_with_password({"email": address, "password": password})
    new = new_address("changed")
    seq = mail_catcher.last_seq()
    pending = client.auth.update_user({"email": new}).user
    assert pending.email == address and pending.new_email == new
    first, _, _ = mailed(mail_catcher, new, seq)
    allow_next_mail(email_database, new)
    client.auth.resend({"type": "email_change", "email": new})
    _, code, _ = mailed(mail_catcher, new, first.seq)
    changed = client.auth.verify_otp({"email": new, "token": code, "type": "email_change"})
    assert changed.user.id == user_id and changed.user.email == new and changed.user.new_email is None
    assert email_client(server, app).auth.sign_in_with_password({"email": new, "password": password}).user.id == user_id
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": password}), 400, "invalid_credentials")
    assert outbox_count(email_database, address) == 1, "secure change is off: the old address got only its sign-up mail"


def test_a_password_change_from_an_old_session_needs_a_reauthentication_nonce(server, email_database, mail_catcher,
                                                                             http):
    app = new_email_app(email_database, mail_catcher, "email-accounts-reauth", email_reauthenticate_password=True)
    address, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    client = email_client(server, app)
    session = client.auth.sign_in_with_password({"email": address, "password": password}).session

    # A fresh session needs no nonce.
    fresh = new_password()
    client.auth.update_user({"password": fresh})

    # Over 24 hours old: reauthentication_needed, then the mailed nonce.
    sql(email_database, "update guestpass.sessions set created_at = now() - interval '25 hours' "
                        f"where id = '{claims(session.access_token)['session_id']}'")
    wanted = new_password()
    assert_api_error(lambda: client.auth.update_user({"password": wanted}), 400, "reauthentication_needed")
    allow_next_mail(email_database, address)
    seq = mail_catcher.last_seq()
    client.auth.reauthenticate()
    message, nonce, link = mailed(mail_catcher, address, seq)
    assert message.subject == "Confirm it's you" and re.fullmatch(r"\d{6}", nonce) and link is None
    wrong = str((int(nonce) + 1) % 1_000_000).zfill(6)
    assert_api_error(lambda: client.auth.update_user({"password": wanted, "nonce": wrong}), 422,
                     "reauthentication_not_valid")
    assert client.auth.update_user({"password": wanted, "nonce": nonce}).user.id == user_id
    assert email_client(server, app).auth.sign_in_with_password({"email": address, "password": wanted}).user.id == user_id
    # Single use.
    assert_api_error(lambda: client.auth.update_user({"password": new_password(), "nonce": nonce}), 422,
                     "reauthentication_not_valid")
    # On the wire: GET, and `{}` (supabase-py's AuthOtpResponse refuses non-null user or session keys).
    allow_next_mail(email_database, address)
    raw = auth_call(http, server, app, "GET", "reauthenticate", token=client.auth.get_session().access_token)
    assert raw.status_code == 200 and raw.json() == {}, raw.text


def test_a_secure_email_change_needs_both_addresses(server, email_database, mail_catcher, http):
    app = new_email_app(email_database, mail_catcher, "email-accounts-secure", email_secure_change=True)
    old, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    client = email_client(server, app)
    client.auth.sign_in_with_password({"email": old, "password": password})
    new = new_address("secure-new")
    allow_next_mail(email_database, old)
    seq = mail_catcher.last_seq()
    assert client.auth.update_user({"email": new}).user.new_email == new
    _, new_code, _ = mailed(mail_catcher, new, seq)
    to_old, old_code, _ = mailed(mail_catcher, old, seq)
    assert to_old.subject == "Confirm your new email address" and new in to_old.text

    # The first confirmation answers a bare User, the change still pending (supabase-swift cannot decode GoTrue's
    # {"msg", "code": "200"}).
    first = client.auth.verify_otp({"email": old, "token": old_code, "type": "email_change"})
    assert first.session is None and first.user is not None
    assert first.user.id == user_id and first.user.email == old and first.user.new_email == new
    assert email_client(server, app).auth.sign_in_with_password({"email": old, "password": password}).user.id == user_id

    second = client.auth.verify_otp({"email": new, "token": new_code, "type": "email_change"})
    assert second.session is not None and second.user.email == new and second.user.new_email is None
    assert email_client(server, app).auth.sign_in_with_password({"email": new, "password": password}).user.id == user_id


def test_a_secure_change_first_answer_on_the_wire_is_a_user(server, email_database, mail_catcher, http):
    app = new_email_app(email_database, mail_catcher, "email-accounts-secure-wire", email_secure_change=True)
    old, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    session = email_client(server, app).auth.sign_in_with_password({"email": old, "password": password}).session
    new = new_address("secure-wire")
    allow_next_mail(email_database, old)
    seq = mail_catcher.last_seq()
    assert auth_call(http, server, app, "PUT", "user", {"email": new}, token=session.access_token).status_code == 200
    _, new_code, _ = mailed(mail_catcher, new, seq)
    first = auth_call(http, server, app, "POST", "verify", {"email": new, "token": new_code, "type": "email_change"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert "access_token" not in body and body["id"] == user_id and body["new_email"] == new
    assert "code" not in body and "msg" not in body


def test_a_password_change_ends_the_other_sessions(server, app, mail_catcher, http):
    address, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    here = email_client(server, app)
    here.auth.sign_in_with_password({"email": address, "password": password})
    elsewhere = email_client(server, app).auth.sign_in_with_password({"email": address, "password": password}).session

    assert_api_error(lambda: here.auth.update_user({"password": password}), 422, "same_password")
    assert refresh(http, server, app, elsewhere.refresh_token).status_code == 200, "a refused change ends nothing"
    elsewhere = email_client(server, app).auth.sign_in_with_password({"email": address, "password": password}).session

    here.auth.update_user({"password": new_password()})
    ended = refresh(http, server, app, elsewhere.refresh_token)
    assert ended.status_code in (400, 403), ended.text
    assert ended.json()["code"] in ("session_not_found", "refresh_token_not_found"), ended.text
    assert here.auth.get_user().user.id == user_id


def test_an_app_template_and_code_length_shape_the_mail(server, email_database, mail_catcher, tmp_path):
    templates = tmp_path / "templates.json"
    templates.write_text(json.dumps({
        "magic_link": {"subject": "{{token}} is your Fortunia code",
                       "text": "Hello {{email}},\nyour code: {{token}} ({{token_length}} digits)\n{{confirmation_url}}\n",
                       "html": "<p>Your code: <b>{{token}}</b></p>"},
    }))
    app = new_email_app(email_database, mail_catcher, "email-accounts-template", email_otp_length=8,
                        email_templates=str(templates))
    address, _, user_id, signup_seq = confirmed_account(server, app, mail_catcher)
    allow_next_mail(email_database, address)
    email_client(server, app).auth.sign_in_with_otp({"email": address})
    message, code, link = mailed(mail_catcher, address, signup_seq)
    assert re.fullmatch(r"\d{8}", code), message.text
    assert message.subject == f"{code} is your Fortunia code"
    assert message.text.startswith(f"Hello {address},") and "(8 digits)" in message.text
    assert message.html is not None and f"<b>{code}</b>" in message.html
    assert link_query(link)["type"] == "magiclink"
    verified = email_client(server, app).auth.verify_otp({"email": address, "token": code, "type": "magiclink"})
    assert verified.user.id == user_id


def test_a_guest_can_sign_in_to_an_existing_account_by_code(server, app, email_database, mail_catcher):
    """`sign_in_with_otp` from a guest's client signs in to the account (another user, as in GoTrue): the way on for a
    guest whose address is taken (email_exists); the app then merges the guest into the account."""
    address, _, user_id, signup_seq = confirmed_account(server, app, mail_catcher)
    client, guest = guest_client(server, app)
    assert_api_error(lambda: client.auth.update_user({"email": address}), 422, "email_exists")
    allow_next_mail(email_database, address)
    client.auth.sign_in_with_otp({"email": address})
    _, code, _ = mailed(mail_catcher, address, signup_seq)
    signed_in = client.auth.verify_otp({"email": address, "token": code, "type": "magiclink"})
    assert signed_in.user.id == user_id != guest.user.id
    assert client.auth.get_user().user.id == user_id


def test_the_token_hash_form_verifies(server, app, mail_catcher, http):
    """supabase-swift's `verifyOTP(tokenHash:type:)`: the mail's token hash (`{{token_hash}}`, the link's token) in
    place of the address and code."""
    address = new_address("token-hash")
    seq = mail_catcher.last_seq()
    user_id = email_client(server, app).auth.sign_up({"email": address, "password": new_password()}).user.id
    _, _, link = mailed(mail_catcher, address, seq)
    token_hash = link_query(link)["token"]
    wrong = auth_call(http, server, app, "POST", "verify", {"token_hash": token_hash[::-1], "type": "signup"})
    assert wrong.status_code == 403 and wrong.json()["code"] == "otp_expired", wrong.text
    verified = auth_call(http, server, app, "POST", "verify", {"token_hash": token_hash, "type": "signup"})
    assert verified.status_code == 200, verified.text
    assert verified.json()["user"]["id"] == user_id and isinstance(verified.json()["expires_at"], int)
    again = auth_call(http, server, app, "POST", "verify", {"token_hash": token_hash, "type": "signup"})
    assert again.status_code == 403 and again.json()["code"] == "otp_expired", again.text


def test_deleting_an_email_account_frees_its_address(server, app, email_database, mail_catcher, http):
    address, password, user_id, _ = confirmed_account(server, app, mail_catcher)
    session = email_client(server, app).auth.sign_in_with_password({"email": address, "password": password}).session
    deleted = http.post(f"{server.url}/v1/account/delete",
                        headers={"apikey": app.publishable_key, "Authorization": f"Bearer {session.access_token}"})
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True, deleted.text
    for table in ("email_credentials", "email_codes", "identities"):
        assert sql(email_database, f"select count(*) from guestpass.{table} where user_id = '{user_id}'") == "0", table
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": password}), 400, "invalid_credentials")
    allow_next_mail(email_database, address)
    again = email_client(server, app).auth.sign_up({"email": address, "password": new_password()})
    assert again.user.id != user_id and again.user.identities, "a real new user, not the made-up answer"


def test_an_imported_bcrypt_password_signs_in_and_is_rehashed(server, app, email_database, mail_catcher):
    """Hashes imported from GoTrue (bcrypt, as pgcrypto's crypt(…, gen_salt('bf')) makes them) verify, and the first
    sign-in replaces them with scrypt."""
    address, _, user_id, _ = confirmed_account(server, app, mail_catcher)
    imported = new_password()
    sql(email_database, "create extension if not exists pgcrypto")
    sql(email_database, f"update guestpass.email_credentials set password_hash = crypt({quoted(imported)}, "
                        f"gen_salt('bf', 6)) where user_id = '{user_id}'")
    assert sql(email_database, f"select left(password_hash, 4) from guestpass.email_credentials "
                               f"where user_id = '{user_id}'") == "$2a$"
    assert_api_error(lambda: email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": imported + "x"}), 400, "invalid_credentials")
    signed_in = email_client(server, app).auth.sign_in_with_password({"email": address, "password": imported})
    assert signed_in.user.id == user_id
    assert sql(email_database, f"select password_hash like '$scrypt$%' from guestpass.email_credentials "
                               f"where user_id = '{user_id}'") == "t"
    assert email_client(server, app).auth.sign_in_with_password(
        {"email": address, "password": imported}).user.id == user_id


def test_a_plain_pkce_challenge_works_too(server, app, mail_catcher, http):
    """RFC 7636's `plain` method (GoTrue accepts it): the verifier is the challenge itself."""
    verifier = ("plain-" + new_password() * 3)[:60]
    address = new_address("pkce-plain")
    seq = mail_catcher.last_seq()
    signed_up = auth_call(http, server, app, "POST", "signup",
                          {"email": address, "password": new_password(), "code_challenge": verifier,
                           "code_challenge_method": "plain"}, query={"redirect_to": "myapp://callback"})
    assert signed_up.status_code == 200, signed_up.text
    _, _, link = mailed(mail_catcher, address, seq)
    opened = open_link(http, server, link)
    auth_code = query_of(opened.headers["location"])["code"]
    exchanged = auth_call(http, server, app, "POST", "token", {"auth_code": auth_code, "code_verifier": verifier},
                          query={"grant_type": "pkce"})
    assert exchanged.status_code == 200 and exchanged.json()["user"]["id"] == signed_up.json()["id"], exchanged.text
