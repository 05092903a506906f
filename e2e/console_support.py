"""The operator console in e2e: operators made by `guestpass operators create`, their TOTP codes (RFC 6238, computed
here independently of the server's), a console server on a port of its own, and a headless Chromium (Debian's
chromium + chromium-driver, driven by selenium) whose screenshots are kept as test artifacts."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import os
import re
import struct
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from conftest import Database, free_port, remember_secret

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ARTIFACTS = Path(os.environ.get("GUESTPASS_REPO_ROOT", Path(__file__).resolve().parent.parent)) / ".build" / "test-artifacts" / "console"


@dataclasses.dataclass
class Operator:
    operator_id: str
    email: str
    password: str
    totp_secret: str | None  # base32, from the otpauth URI the command printed once

    last_step: int = -1  # the step of the last code sent: the server takes each step's code once

    def code(self) -> str:
        """A code the server has not taken yet: the current step's, else the next one's (accepted a step early), else
        the one after the wait for the step after that. Never the previous step's: the server takes it too, but only
        until the current step ends, which a slow page load on a loaded machine outlasts."""
        assert self.totp_secret is not None, "this operator has no second factor"
        while True:
            now = int(time.time() // 30)
            step = max(now, self.last_step + 1)
            if step <= now + 1:
                self.last_step = step
                return totp(self.totp_secret, step * 30 + 1)
            time.sleep(1)


def totp(secret_base32: str, at: float | None = None, step: int = 30, digits: int = 6) -> str:
    """RFC 6238 with HMAC-SHA1, the authenticator apps' default."""
    padded = secret_base32.upper() + "=" * (-len(secret_base32) % 8)
    key = base64.b32decode(padded)
    counter = int((time.time() if at is None else at) // step)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = (struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % (10 ** digits)
    return str(value).zfill(digits)


def create_operator(database: Database, email: str, *, apps: list[str] | None = None, all_apps: bool = False,
                    second_factor: bool = True) -> Operator:
    """`guestpass operators create` as the database owner, the password on stdin."""
    password = remember_secret(base64.urlsafe_b64encode(os.urandom(18)).decode())
    argv = [database.bin, "operators", "create", "--email", email]
    if second_factor:
        argv += ["--totp", "--require-totp"]
    if all_apps:
        argv += ["--all-apps"]
    for app in apps or []:
        argv += ["--app", app]
    done = subprocess.run(argv, input=password + "\n", capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DATABASE_URL": database.super_url})
    assert done.returncode == 0, f"operators create failed: {done.stdout}\n{done.stderr}"
    operator_id = UUID.search(done.stdout)
    assert operator_id, done.stdout
    secret = None
    if second_factor:
        uri = re.search(r"otpauth://totp/\S+", done.stdout)
        assert uri, f"no otpauth URI in: {done.stdout}"
        secret = parse_qs(urlsplit(uri.group(0)).query)["secret"][0]
        remember_secret(secret)
    return Operator(operator_id.group(0), email, password, secret)


def start_console(database: Database, start_server, name: str):
    """A `guestpass serve` with its console on a free loopback port: the server and the console's base URL."""
    port = free_port()
    url = database.serve_environment.get("GUESTPASS_CONSOLE_DATABASE_URL")
    assert url, "guestpass dev up printed no GUESTPASS_CONSOLE_DATABASE_URL"
    server = start_server(name, GUESTPASS_CONSOLE_ADDRESS=f"127.0.0.1:{port}", GUESTPASS_CONSOLE_DATABASE_URL=url)
    return server, f"http://127.0.0.1:{port}"


def new_operator(database: Database, *apps: str, second_factor: bool = True) -> Operator:
    """An operator of `apps` with a fresh email."""
    return create_operator(database, f"ops-{os.urandom(4).hex()}@example.com", apps=list(apps), second_factor=second_factor)


class ConsoleClient:
    """An HTTP client of the console that signs in as a browser would (forms, cookies), for the checks that need no
    browser: CSRF, listeners, page sources, fuzzing."""

    def __init__(self, base: str):
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=15.0, follow_redirects=False)

    def csrf(self, path: str) -> str:
        page = self.http.get(path)
        match = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert match, f"no CSRF token on {path}: {page.status_code} {page.text[:300]}"
        return match.group(1)

    def sign_in(self, operator: Operator) -> None:
        page = self.http.get("/sign-in")
        pre = re.search(r'name="pre" value="([^"]+)"', page.text).group(1)
        answer = self.http.post("/sign-in", data={"pre": pre, "email": operator.email, "password": operator.password})
        assert answer.status_code == 303, (answer.status_code, answer.text[:300])
        if answer.headers["location"] == "/sign-in/code":
            answer = self.http.post("/sign-in/code", data={"csrf": self.csrf("/sign-in/code"), "code": operator.code()})
            assert answer.status_code == 303 and answer.headers["location"] == "/apps", (answer.status_code, answer.text[:300])

    def close(self) -> None:
        self.http.close()


def chromium(width: int = 1280, height: int = 900):
    """A headless Chromium through chromium-driver (Debian's), sized as asked."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", "--lang=en-US"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def screenshot(driver, name: str) -> Path:
    """The page as it looks now, kept under .build/test-artifacts/console/<name>.png (full height)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.get_window_size()["width"]
    driver.set_window_size(width, min(max(height + 120, 600), 6000))
    driver.save_screenshot(str(path))
    return path


def click_and_wait(driver, element) -> None:
    """Clicks `element` (a submit button or link) and waits until the next page has loaded."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    page = driver.find_element("tag name", "html")
    element.click()
    WebDriverWait(driver, 15).until(expected_conditions.staleness_of(page))
    WebDriverWait(driver, 15).until(lambda d: d.execute_script("return document.readyState") == "complete")


ACCESSIBILITY_PROBLEMS = """
const problems = [];
if (document.querySelectorAll('h1').length !== 1) problems.push('h1 count ' + document.querySelectorAll('h1').length);
if (!document.documentElement.lang) problems.push('no lang');
for (const field of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
  if (!field.id || !document.querySelector('label[for="' + field.id + '"]')) problems.push('unlabelled ' + (field.name || field.outerHTML));
}
for (const button of document.querySelectorAll('button, a')) {
  const name = (button.getAttribute('aria-label') || button.textContent || '').trim();
  if (!name) problems.push('unnamed ' + button.outerHTML.slice(0, 80));
}
for (const table of document.querySelectorAll('table')) {
  if (!table.querySelector('caption')) problems.push('table without caption');
  for (const th of table.querySelectorAll('th')) if (!th.getAttribute('scope')) problems.push('th without scope');
}
return problems;
"""


def accessibility_problems(driver) -> list[str]:
    """What keyboard and screen-reader users would miss on the page: one h1, a language, a label for every field, a name
    for every button and link, a caption and header scopes for every table."""
    return driver.execute_script(ACCESSIBILITY_PROBLEMS)
