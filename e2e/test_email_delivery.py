"""Mail delivery through the outbox: a request commits its mail with its code, and the senders deliver it.

A server killed (-9) while it holds a mail's lease, mid-send to a relay that never answers: after the restart the mail
arrives exactly once. The relay down: the request still answers at once and the mail goes when the relay is back. A
transient refusal (451) is retried and the mail arrives once. A request that fails after queueing a mail sends
nothing. Two servers on one database deliver each mail once; a server with its sender off leaves delivery to the
others; links point at GUESTPASS_PUBLIC_URL; a relay whose certificate the app does not trust gets nothing.

On a database of this module's own: only the servers started here send mail, so which one holds a lease is known.
Backoffs and leases are aged in the outbox instead of waited for.
"""

from __future__ import annotations

import re
import time

import httpx
import pytest

pytest.register_assert_rewrite("email_support")

from email_support import (  # noqa: E402
    SMTP_PASSWORD,
    ServerSet,
    SilentRelay,
    allow_next_mail,
    api_error,
    assert_api_error,
    configure_app,
    drop_database,
    email_client,
    kill_server,
    mailed,
    new_address,
    new_database,
    new_email_app,
    new_password,
    outbox_count,
    outbox_rows,
    quoted,
    smtp_options,
    sql,
    start_catcher,
    wait_until,
)
from conftest import free_port  # noqa: E402
from support import create_app  # noqa: E402

pytest_plugins = ("email_support",)

GRACE = 1.0  # seconds a second delivery would have had to show up (the senders poll every 250 ms when idle)


@pytest.fixture(scope="module")
def delivery_db(database):
    db = new_database(database, "delivery")
    try:
        yield db
    finally:
        drop_database(db)


@pytest.fixture()
def servers(delivery_db):
    started = ServerSet(delivery_db)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture()
def catcher(request, delivery_db, smtp_certificate):
    started = start_catcher(delivery_db, smtp_certificate, f"mail-catcher-{request.node.name[:60]}")
    try:
        yield started
    finally:
        started.stop()


def due_now(db, address: str) -> None:
    """The mails to `address` are due now: their backoff or lease is over."""
    sql(db, "update guestpass.mail_outbox set next_attempt_at = now(), claimed_until = null "
            f"where recipient = {quoted(address)} and sent_at is null and failed_at is null")


def assert_delivered_once(catcher, db, address: str) -> None:
    time.sleep(GRACE)
    assert catcher.count_to(address) == 1, [m.entry for m in catcher.messages_to(address)]
    rows = outbox_rows(db, address)
    assert len(rows) == 1 and rows[0]["sent_at"] is not None and rows[0]["erased"] is True, rows


def test_a_server_killed_mid_send_delivers_the_mail_once_after_the_restart(delivery_db, servers, smtp_certificate, http):
    relay = SilentRelay()
    app = create_app(delivery_db, "delivery-kill")
    configure_app(delivery_db, app, **smtp_options(relay.port, smtp_certificate[0]))
    first = servers.start("email-delivery-kill")
    address = new_address("killed")
    try:
        email_client(first, app).auth.sign_in_with_otp({"email": address})
        # The sender leased the mail and is talking to the relay, which says nothing: the mail is in flight.
        wait_until(lambda: relay.accepted and outbox_rows(delivery_db, address)[0]["attempts"] == 1,
                   what="the sender's lease and connection")
        kill_server(first)
    finally:
        relay.close()
    rows = outbox_rows(delivery_db, address)
    assert rows[0]["sent_at"] is None and rows[0]["attempts"] == 1 and rows[0]["waiting"] is True, rows

    # The relay is back on the same port; the lease is aged instead of waited out; another server starts.
    catcher = start_catcher(delivery_db, smtp_certificate, "mail-catcher-delivery-kill", port=relay.port)
    try:
        due_now(delivery_db, address)
        first.start()  # the same server again (a new process, its log continued)
        message, code, _ = mailed(catcher, address)
        assert message.entry["tls"] is True
        assert_delivered_once(catcher, delivery_db, address)
        assert outbox_rows(delivery_db, address)[0]["attempts"] == 2
        assert email_client(first, app).auth.verify_otp({"email": address, "token": code, "type": "email"}).session
    finally:
        catcher.stop()


def test_with_the_relay_down_the_request_answers_and_the_mail_goes_when_it_is_back(
        delivery_db, servers, catcher, http):
    app = new_email_app(delivery_db, catcher, "delivery-down")
    server = servers.start("email-delivery-down")
    catcher.stop()
    address, password = new_address("relay-down"), new_password()

    started = time.monotonic()
    user = email_client(server, app).auth.sign_up({"email": address, "password": password}).user
    assert time.monotonic() - started < 5, "the request does not wait for SMTP"
    assert user.email == address
    wait_until(lambda: (outbox_rows(delivery_db, address) or [{}])[0].get("last_error") is not None,
               what="a failed attempt")
    rows = outbox_rows(delivery_db, address)
    assert rows[0]["sent_at"] is None and rows[0]["failed_at"] is None and rows[0]["waiting"] is True, rows
    assert rows[0]["erased"] is False, "a transient failure keeps the mail"
    assert SMTP_PASSWORD not in rows[0]["last_error"]

    catcher.start()
    due_now(delivery_db, address)
    _, code, _ = mailed(catcher, address)
    assert_delivered_once(catcher, delivery_db, address)
    assert email_client(server, app).auth.verify_otp({"email": address, "token": code, "type": "signup"}).session


def test_a_transient_refusal_is_retried_and_delivered_once(delivery_db, servers, catcher, smtp_certificate):
    catcher.stop()
    catcher.start(fail_next=1)
    app = new_email_app(delivery_db, catcher, "delivery-451")
    metrics_port = free_port()
    server = servers.start("email-delivery-451", GUESTPASS_METRICS_ADDRESS=f"127.0.0.1:{metrics_port}")
    address = new_address("refused-once")
    email_client(server, app).auth.sign_in_with_otp({"email": address})
    wait_until(lambda: (outbox_rows(delivery_db, address) or [{}])[0].get("last_error") is not None,
               what="the 451")
    rows = outbox_rows(delivery_db, address)
    assert rows[0]["attempts"] == 1 and rows[0]["sent_at"] is None and rows[0]["failed_at"] is None, rows
    assert "451" in rows[0]["last_error"], rows
    assert catcher.count_to(address) == 0

    due_now(delivery_db, address)
    mailed(catcher, address)
    assert_delivered_once(catcher, delivery_db, address)
    assert outbox_rows(delivery_db, address)[0]["attempts"] == 2

    # The operator sees it: a failure to be retried, then a mail sent, and the queue's depth and oldest age.
    text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    assert metric(text, "guestpass_mail_failed_total", final="false") == 1, text[-2000:]
    assert metric(text, "guestpass_mail_sent_total") >= 1
    assert re.search(r"^guestpass_mail_queued(\{.*\})? [0-9.e+-]+$", text, re.M), "the queue depth gauge"
    assert re.search(r"^guestpass_mail_oldest_queued_seconds(\{.*\})? [0-9.e+-]+$", text, re.M), "the oldest age gauge"


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels` (0 when absent)."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}(?:{{(.*)}})? ([0-9.e+-]+)$", line)
        if match and all(f'{k}="{v}"' in (match.group(1) or "") for k, v in labels.items()):
            total += float(match.group(2))
    return total


def test_a_request_that_fails_after_queueing_a_mail_sends_nothing(delivery_db, servers, catcher):
    """A secure email change queues a mail to the new address, then one to the current address; the app's hourly cap
    (1) refuses the second, so the request fails and its first mail goes with it."""
    app = new_email_app(delivery_db, catcher, "delivery-rollback", email_autoconfirm=True, email_secure_change=True,
                        email_hourly_limit=1)
    server = servers.start("email-delivery-rollback")
    old, password = new_address("rollback-old"), new_password()
    client = email_client(server, app)
    assert client.auth.sign_up({"email": old, "password": password}).session is not None
    new = new_address("rollback-new")
    error = api_error(lambda: client.auth.update_user({"email": new}))
    assert getattr(error, "status", None) == 429, error
    assert getattr(error, "code", None) in ("over_request_rate_limit", "over_email_send_rate_limit"), error
    user = client.auth.get_user().user
    assert user.email == old and user.new_email is None
    assert outbox_count(delivery_db, new) == 0 and outbox_count(delivery_db, old) == 0
    assert sql(delivery_db, f"select count(*) from guestpass.email_codes where user_id = '{user.id}'") == "0"
    time.sleep(GRACE)
    assert catcher.count_to(new) == 0 and catcher.count_to(old) == 0


def test_a_sign_up_refused_by_the_hourly_cap_leaves_nothing(delivery_db, servers, catcher):
    app = new_email_app(delivery_db, catcher, "delivery-no-mail", email_hourly_limit=0)
    server = servers.start("email-delivery-no-mail")
    address = new_address("capped")
    assert_api_error(lambda: email_client(server, app).auth.sign_up({"email": address, "password": new_password()}),
                     429, "over_email_send_rate_limit")
    assert sql(delivery_db, f"select count(*) from public.users where email = {quoted(address)}") == "0"
    assert outbox_count(delivery_db, address) == 0


def test_two_servers_on_one_database_deliver_each_mail_once(delivery_db, servers, catcher):
    app = new_email_app(delivery_db, catcher, "delivery-two")
    pair = [servers.start("email-delivery-two-a"), servers.start("email-delivery-two-b")]
    addresses = [new_address(f"pair-{n}") for n in range(24)]
    clients = [email_client(server, app) for server in pair]
    for n, address in enumerate(addresses):
        clients[n % 2].auth.sign_in_with_otp({"email": address})
    for address in addresses:
        mailed(catcher, address)
    time.sleep(GRACE)
    counts = {address: catcher.count_to(address) for address in addresses}
    assert set(counts.values()) == {1}, counts
    attempts = sql(delivery_db, "select string_agg(distinct attempts::text, ',') from guestpass.mail_outbox "
                                f"where app_id = '{app.app_id}'")
    assert attempts == "1", f"attempts per mail: {attempts}"
    assert sql(delivery_db, "select count(*) from guestpass.mail_outbox "
                            f"where app_id = '{app.app_id}' and (sent_at is null or payload is not null)") == "0"
    # A second round to the same addresses, after the interval: still one each, and no mail repeated.
    for address in addresses[:6]:
        allow_next_mail(delivery_db, address)
        clients[1].auth.sign_in_with_otp({"email": address})
    for address in addresses[:6]:
        wait_until(lambda address=address: catcher.count_to(address) == 2, what=f"the second mail to {address}")
    time.sleep(GRACE)
    assert all(catcher.count_to(address) == 2 for address in addresses[:6])


def test_links_point_at_the_public_url(delivery_db, servers, catcher):
    app = new_email_app(delivery_db, catcher, "delivery-public-url")
    server = servers.start("email-delivery-public-url", GUESTPASS_PUBLIC_URL="https://auth.example.test/gp")
    address = new_address("public-url")
    email_client(server, app).auth.sign_in_with_otp({"email": address})
    _, _, link = mailed(catcher, address)
    assert link.startswith("https://auth.example.test/gp/auth/v1/verify?"), link


def test_a_server_with_the_sender_off_leaves_delivery_to_the_others(delivery_db, servers, catcher):
    app = new_email_app(delivery_db, catcher, "delivery-sender-off")
    quiet = servers.start("email-delivery-sender-off", GUESTPASS_MAIL_SENDER="off")
    address = new_address("sender-off")
    email_client(quiet, app).auth.sign_in_with_otp({"email": address})
    time.sleep(GRACE)
    rows = outbox_rows(delivery_db, address)
    assert rows[0]["attempts"] == 0 and rows[0]["sent_at"] is None, rows
    servers.start("email-delivery-sender-on")
    mailed(catcher, address)
    assert_delivered_once(catcher, delivery_db, address)


def test_a_relay_whose_certificate_is_not_trusted_gets_no_mail(delivery_db, servers, catcher):
    """The relay's certificate is checked: without the CA file that signed it (a self-signed one here), the mail is
    not handed over (and the code it carries stays with the server)."""
    app = create_app(delivery_db, "delivery-untrusted")
    options = smtp_options(catcher.port, catcher.cert)
    del options["smtp_ca_file"]
    configure_app(delivery_db, app, **options)
    server = servers.start("email-delivery-untrusted")
    address = new_address("untrusted")
    email_client(server, app).auth.sign_in_with_otp({"email": address})
    wait_until(lambda: (outbox_rows(delivery_db, address) or [{}])[0].get("last_error") is not None,
               what="a failed attempt")
    time.sleep(GRACE)
    assert catcher.count_to(address) == 0
    rows = outbox_rows(delivery_db, address)
    assert rows[0]["sent_at"] is None, rows
    assert SMTP_PASSWORD not in (rows[0]["last_error"] or "")
