"""The operator console in a real headless Chromium (issue 36): an operator signs in with a TOTP code, finds a guest
by device id, grants credits (balance, ledger and audit row updated), revokes a device (the API refuses its tokens
afterwards), changes the app's quota (the API applies it); a post without the session's CSRF token changes nothing;
an operator of one app is refused another app's user. Screenshots of every page: .build/test-artifacts/console/."""

from __future__ import annotations

import base64
import json

import pytest
from selenium.webdriver.common.by import By

from conftest import api_headers, psql
from console_support import (
    ConsoleClient, accessibility_problems, chromium, click_and_wait, new_operator, screenshot, start_console,
)
from support import create_app, guest_headers, sign_up_guest


def claims(access_token: str) -> dict:
    payload = access_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@pytest.fixture(scope="module")
def console(database, start_server):
    return start_console(database, start_server, "console")


@pytest.fixture(scope="module")
def apps(database):
    return create_app(database, "console-a"), create_app(database, "console-b")


@pytest.fixture(scope="module")
def operator(database, apps):
    return new_operator(database, apps[0].app_id)


@pytest.fixture(scope="module")
def browser():
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def page(driver, name: str) -> None:
    """A screenshot of the page, which must be usable with a keyboard and a screen reader."""
    assert accessibility_problems(driver) == [], (name, driver.current_url)
    screenshot(driver, name)


def sign_in(driver, base: str, operator) -> None:
    driver.delete_all_cookies()
    driver.get(base + "/sign-in")
    driver.find_element(By.ID, "email").send_keys(operator.email)
    driver.find_element(By.ID, "password").send_keys(operator.password)
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/sign-in'] button"))
    assert driver.current_url.endswith("/sign-in/code"), driver.current_url
    driver.find_element(By.ID, "code").send_keys(operator.code())
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/sign-in/code'] button"))
    assert driver.current_url.endswith("/apps"), (driver.current_url, driver.page_source[:500])


def test_an_operator_signs_in_finds_a_guest_and_acts(console, apps, operator, browser, http):
    server, base = console
    app, _ = apps
    guest = sign_up_guest(http, server, app)
    device_id = claims(guest.access_token)["device_id"]

    browser.get(base + "/sign-in")
    page(browser, "01-sign-in")
    sign_in(browser, base, operator)
    assert "console-a" in browser.find_element(By.TAG_NAME, "main").text
    assert "console-b" not in browser.page_source
    page(browser, "02-apps")

    # Find the guest by its device id.
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Find a user"))
    browser.find_element(By.ID, "value").send_keys(device_id)
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/users'] button"))
    page(browser, "03-search")
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, guest.user_id))
    assert device_id in browser.find_element(By.ID, "devices").text
    page(browser, "04-user")

    # Grant 5 credits: the page's balance and ledger, the API's quota and an audit row.
    balance = int(browser.find_element(By.ID, "balance").text)
    browser.find_element(By.ID, "delta").send_keys("5")
    browser.find_element(By.ID, "reason").send_keys("support ticket 42")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "form[action$='/credits'] button"))
    assert int(browser.find_element(By.ID, "balance").text) == balance + 5
    assert "support ticket 42" in browser.find_element(By.ID, "ledger").text
    quota = http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(app, guest), json={})
    assert quota.status_code == 200 and quota.json()["credits_remaining"] == balance + 5, quota.text
    audit = psql(server.db.super_url, f"select action || ' ' || coalesce(detail::text, '') from guestpass.operator_audit "
                                      f"where user_id = '{guest.user_id}' order by id")
    assert "support ticket 42" in audit, audit
    page(browser, "05-credits-granted")

    # Revoke the device: its tokens are refused by the API afterwards.
    assert http.get(server.url + "/auth/v1/user", headers=guest_headers(app, guest)).status_code == 200
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, f"button[aria-label='Revoke device {device_id}']"))
    assert "revoked" in browser.find_element(By.ID, "devices").text
    refused = http.get(server.url + "/auth/v1/user", headers=guest_headers(app, guest))
    assert refused.status_code == 403 and refused.json()["code"] == "session_not_found", refused.text
    page(browser, "06-device-revoked")

    # The app's quota: the API applies the new daily allowance.
    browser.get(base + f"/apps/{app.app_id}")
    page(browser, "07-app")
    field = browser.find_element(By.ID, "daily_free_allowance")
    field.clear()
    field.send_keys("7")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "form[action$='/quota'] button"))
    assert browser.find_element(By.ID, "daily_free_allowance").get_attribute("value") == "7"
    fresh = sign_up_guest(http, server, app)
    quota = http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(app, fresh), json={})
    assert quota.status_code == 200 and quota.json()["daily_limit"] == 7, quota.text

    browser.get(base + "/audit")
    assert "support ticket 42" in browser.find_element(By.TAG_NAME, "main").text
    page(browser, "08-audit")
    browser.get(base + "/health")
    assert browser.find_elements(By.CSS_SELECTOR, "figure svg"), browser.page_source[:500]
    page(browser, "09-health")

    # Phone-sized: the user page still has every section, nothing wider than the screen.
    browser.set_window_size(390, 844)
    browser.get(base + f"/users/{guest.user_id}")
    overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, overflow
    page(browser, "10-user-phone")
    browser.set_window_size(1280, 900)


def test_a_post_without_the_sessions_csrf_token_changes_nothing(console, apps, operator, http):
    server, base = console
    app, _ = apps
    guest = sign_up_guest(http, server, app)
    client = ConsoleClient(base)
    try:
        client.sign_in(operator)
        for data in ({"delta": "9", "reason": "no token"}, {"delta": "9", "reason": "wrong token", "csrf": "x" * 43}):
            answer = client.http.post(f"/users/{guest.user_id}/credits", data=data)
            assert answer.status_code == 403, (answer.status_code, answer.text[:300])
        quota = http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(app, guest), json={})
        assert quota.json()["credits_remaining"] == 0, quota.text
        count = psql(server.db.super_url, f"select count(*) from guestpass.operator_audit where user_id = '{guest.user_id}'")
        assert count.strip() == "0", count
    finally:
        client.close()


def test_an_operator_of_one_app_is_refused_another_apps_user(console, database, apps, browser, http):
    server, base = console
    app, other = apps
    theirs = sign_up_guest(http, server, other)
    outsider = new_operator(database, app.app_id)
    sign_in(browser, base, outsider)
    browser.get(base + f"/users/{theirs.user_id}")
    assert "Not yours" in browser.find_element(By.TAG_NAME, "h1").text
    page(browser, "11-refused")
    browser.get(base + f"/users?kind=device_id&value={claims(theirs.access_token)['device_id']}")
    assert "No user of your apps matches" in browser.find_element(By.TAG_NAME, "main").text
    client = ConsoleClient(base)
    try:
        client.sign_in(outsider)
        csrf = client.csrf("/apps")
        answer = client.http.post(f"/users/{theirs.user_id}/credits", data={"csrf": csrf, "delta": "3", "reason": "x"})
        assert answer.status_code == 403, answer.status_code
        answer = client.http.post(f"/apps/{other.app_id}/quota",
                                  data={"csrf": csrf, "daily_free_allowance": "1", "welcome_grant_credits": "0"})
        assert answer.status_code == 403, answer.status_code
    finally:
        client.close()
    quota = http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(other, theirs), json={})
    assert quota.json()["credits_remaining"] == 0 and quota.json()["daily_limit"] != 1, quota.text
