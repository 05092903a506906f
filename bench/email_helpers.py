#!/usr/bin/env python3
"""Helpers of bench/email.sh (standard library only; every loop bounded by its count and a deadline).

    email_helpers.py scrypt LOG_N R P ITERATIONS
        ms per scrypt derivation through hashlib (OpenSSL's EVP_PBE_scrypt, the libcrypto the server uses), median
        of ITERATIONS: the `openssl speed`-like figure of one KDF.
    email_helpers.py signup URL APIKEY COUNT PASSWORD OUT_LUA CONCURRENCY
        signs up COUNT confirmed users pw-<i>@bench.example (the app has autoconfirm on: each answer is a session),
        then writes OUT_LUA, a Lua list of {email, password} for bench/email_password.lua.
    email_helpers.py otp URL APIKEY FIRST LAST CONCURRENCY
        POST /auth/v1/otp for otp-<FIRST…LAST>@bench.example (each from its own 10.x.y.z in X-Forwarded-For): one
        new unconfirmed user, one pending code and one queued mail each. Prints JSON {sent, seconds, statuses}.
    email_helpers.py catcher DIR FIRST LAST
        the mail catcher's .eml files per recipient (the To header of each file): JSON {files, expected, exactly_once,
        missing, doubled, unexpected, code_of_first} — code_of_first is the code mailed to otp-<FIRST>@bench.example.
    email_helpers.py verify URL APIKEY EMAIL CODE
        POST /auth/v1/verify {type: email, email, token: CODE}: prints the status and whether a session came back.
"""

import concurrent.futures
import email
import email.policy
import hashlib
import json
import os
import random
import re
import statistics
import sys
import time
import urllib.error
import urllib.request

DEADLINE_SECONDS = 300  # no helper runs longer than this, whatever its count


def post(url, apikey, path, body, client_ip=None, timeout=30):
    headers = {"apikey": apikey, "Authorization": "Bearer " + apikey, "Content-Type": "application/json"}
    if client_ip:
        headers["X-Forwarded-For"] = client_ip
    request = urllib.request.Request(url + path, method="POST", data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def random_ip():
    return f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def scrypt(log_n, r, p, iterations):
    n = 1 << int(log_n)
    r, p = int(r), int(p)
    times = []
    deadline = time.monotonic() + 60
    for i in range(int(iterations)):
        if time.monotonic() > deadline:
            break
        start = time.perf_counter()
        hashlib.scrypt(b"bench-password-%d" % i, salt=os.urandom(16), n=n, r=r, p=p,
                       maxmem=2 * 128 * r * n + (1 << 20), dklen=32)
        times.append((time.perf_counter() - start) * 1000)
    print(f"{statistics.median(times):.2f}")


def run_bounded(count, concurrency, job):
    """job(i) for i in 0..count-1 on `concurrency` threads; stops submitting at the deadline."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = []
        for i in range(count):
            if time.monotonic() > deadline:
                break
            futures.append(pool.submit(job, i))
        for future in futures:
            results.append(future.result(timeout=max(1, deadline - time.monotonic() + 30)))
    return results


def signup(url, apikey, count, password, out_lua, concurrency):
    count, concurrency = int(count), int(concurrency)

    def one(i):
        address = f"pw-{i + 1}@bench.example"
        status, body = post(url, apikey, "/auth/v1/signup", {"email": address, "password": password}, random_ip())
        token = json.loads(body).get("access_token") if status == 200 else None
        return address, status, token, body[:300]

    rows = run_bounded(count, concurrency, one)
    bad = [row for row in rows if row[1] != 200 or not row[2]]
    if bad or len(rows) != count:
        sys.exit(f"signup: {len(bad)} of {len(rows)} sign-ups gave no session, e.g. {bad[:1]}")
    with open(out_lua, "w") as f:
        f.write("return {\n" + "".join(f'  {{ "{a}", "{password}" }},\n' for a, _, _, _ in rows) + "}\n")


def otp(url, apikey, first, last, concurrency):
    first, last, concurrency = int(first), int(last), int(concurrency)

    def one(i):
        status, body = post(url, apikey, "/auth/v1/otp", {"email": f"otp-{first + i}@bench.example"}, random_ip())
        return status, body

    start = time.monotonic()
    rows = run_bounded(last - first + 1, concurrency, one)
    seconds = time.monotonic() - start
    statuses = {}
    for status, body in rows:
        key = str(status) if status == 200 and body.strip() == b"{}" else f"{status} {body[:120].decode(errors='replace')}"
        statuses[key] = statuses.get(key, 0) + 1
    print(json.dumps({"sent": statuses.get("200", 0), "seconds": seconds, "statuses": statuses}))


CODE = re.compile(r"code\D{0,40}?(?<!\d)(\d{6,10})(?!\d)", re.IGNORECASE)  # as scripts/mail-catcher finds it


def catcher(directory, first, last):
    first, last = int(first), int(last)
    expected = {f"otp-{i}@bench.example" for i in range(first, last + 1)}
    counts = {}
    code_of_first = None
    files = sorted(name for name in os.listdir(directory) if name.endswith(".eml"))
    for name in files:
        with open(os.path.join(directory, name), "rb") as f:
            message = email.message_from_binary_file(f, policy=email.policy.default)
        to = str(message["To"] or "").strip().lower()
        to = re.sub(r"^.*<([^>]*)>.*$", r"\1", to)
        counts[to] = counts.get(to, 0) + 1
        if to == f"otp-{first}@bench.example":
            part = message.get_body(preferencelist=("plain",))
            match = CODE.search(part.get_content() if part else "")
            code_of_first = match.group(1) if match else None
    print(json.dumps({
        "files": len(files),
        "expected": len(expected),
        "exactly_once": sum(1 for a in expected if counts.get(a) == 1),
        "missing": sum(1 for a in expected if a not in counts),
        "doubled": sum(1 for a in expected if counts.get(a, 0) > 1),
        "unexpected": sum(n for a, n in counts.items() if a not in expected),
        "code_of_first": code_of_first,
    }))


def verify(url, apikey, address, code):
    status, body = post(url, apikey, "/auth/v1/verify", {"type": "email", "email": address, "token": code}, random_ip())
    session = status == 200 and bool(json.loads(body).get("access_token"))
    print(json.dumps({"status": status, "session": session, "body": body[:200].decode(errors="replace") if not session else ""}))


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"scrypt": scrypt, "signup": signup, "otp": otp, "catcher": catcher, "verify": verify}[command](*arguments)
