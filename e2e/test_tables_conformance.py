"""A table-driven conformance suite for `/rest/v1/readings`: every case of tables_conformance.json, one test each.

A case is `{name, source, as, method, path, headers?, body?, expect, after?}`:
  as        "user" (a signed-in guest, the owner of the rows below), "anon" (the publishable key alone) or "service"
            (the secret key as apikey and bearer)
  path      relative to /rest/v1/, with its query string as sent
  body      JSON sent as the request body; a string is sent as is (Content-Type application/json)
  expect    status; headers: a subset, exact values (null: the header is absent); body: the exact JSON, or "empty"
            (no bytes); body_keys: the keys of the object (or of each object of the array); error: a subset of the
            error body, which must hold exactly code/message/details/hint with a string code
  after     {as, path, body}: a GET whose body must then be exactly `body` (what a write left behind)
  source    where the expected behaviour comes from (PostgREST's docs/references/api/*.rst, errors.rst, its
            test/spec files, or GuestPass's README where it deliberately differs)
`$USER`, `$STRANGER` and `$APP` stand for the owner's id, another guest's id (of the same app) and the app's id.

Before each case the rows are reset with the secret key: the owner's five readings (fixed ids, kinds, contents and
created_at) and the stranger's one, so no case depends on another or on the order they run in.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from conftest import HTTP_TIMEOUT, api_headers, new_device_secret
from support import bearer_headers

REST = "/rest/v1/"
ERROR_KEYS = {"code", "message", "details", "hint"}
CASES = json.loads((Path(__file__).resolve().parent / "tables_conformance.json").read_text())

OWNER_ROWS = [
    ("c0ffee00-0000-4000-8000-000000000001", "face", {"score": 1, "tags": ["a"]}, "2026-03-01T10:00:00+00:00"),
    ("c0ffee00-0000-4000-8000-000000000002", "palm", {"score": 2, "lines": 3}, "2026-03-02T10:00:00+00:00"),
    ("c0ffee00-0000-4000-8000-000000000003", "coffee", {"score": 3, "note": "a,b"}, "2026-03-03T10:00:00+00:00"),
    ("c0ffee00-0000-4000-8000-000000000004", "palm", {"score": 4}, "2026-03-04T10:00:00+00:00"),
    ("c0ffee00-0000-4000-8000-000000000005", "face", {}, "2026-03-05T10:00:00+00:00"),
]
STRANGER_ROW = ("c0ffee00-0000-4000-8000-000000000099", "coffee", {}, "2026-03-09T10:00:00+00:00")


def test_the_table_has_enough_cases():
    assert len(CASES) >= 40
    names = [case["name"] for case in CASES]
    assert len(set(names)) == len(names), "case names are unique"
    for case in CASES:
        assert case["as"] in ("user", "anon", "service") and "status" in case["expect"], case["name"]


class World:
    def __init__(self, server, app, http: httpx.Client):
        self.server = server
        self.app = app
        self.http = http
        self.owner = self._sign_up()
        self.stranger = self._sign_up()
        self.service_headers = {"apikey": app.secret_key, "Authorization": f"Bearer {app.secret_key}"}

    def _sign_up(self) -> dict:
        response = self.http.post(self.server.url + "/auth/v1/signup", headers=api_headers(self.app),
                                  json={"data": {"device_id": new_device_secret()}})
        assert response.status_code == 200, response.text
        return response.json()

    def headers_for(self, who: str) -> dict[str, str]:
        if who == "user":
            return bearer_headers(self.app, self.owner["access_token"])
        if who == "anon":
            return api_headers(self.app)
        return dict(self.service_headers)

    def substitute(self, value):
        text = json.dumps(value)
        for token, replacement in (("$USER", self.owner["user"]["id"]), ("$STRANGER", self.stranger["user"]["id"]),
                                   ("$APP", self.app.app_id)):
            text = text.replace(token, replacement)
        return json.loads(text)

    def reset(self) -> None:
        """The owner's five rows and the stranger's one, exactly; nothing else of theirs."""
        owner, stranger = self.owner["user"]["id"], self.stranger["user"]["id"]
        deleted = self.http.delete(self.server.url + REST + f"readings?user_id=in.({owner},{stranger})",
                                   headers=self.service_headers)
        assert deleted.status_code == 204, f"reset (delete): {deleted.status_code} {deleted.text}"
        rows = [{"id": rid, "user_id": owner, "kind": kind, "content": content, "created_at": at}
                for rid, kind, content, at in OWNER_ROWS]
        rid, kind, content, at = STRANGER_ROW
        rows.append({"id": rid, "user_id": stranger, "kind": kind, "content": content, "created_at": at})
        inserted = self.http.post(self.server.url + REST + "readings", headers=self.service_headers, json=rows)
        assert inserted.status_code == 201, f"reset (insert): {inserted.status_code} {inserted.text}"

    def send(self, who: str, method: str, path: str, headers: dict | None = None, body=None) -> httpx.Response:
        all_headers = {**self.headers_for(who), **(headers or {})}
        kwargs = {}
        if isinstance(body, str):
            all_headers.setdefault("Content-Type", "application/json")
            kwargs["content"] = body.encode()
        elif body is not None:
            kwargs["json"] = body
        return self.http.request(method, self.server.url + REST + path, headers=all_headers, **kwargs)


@pytest.fixture(scope="module")
def world(server, app):
    with httpx.Client(timeout=HTTP_TIMEOUT) as http:
        yield World(server, app, http)


def describe(response: httpx.Response) -> str:
    shown = {k: v for k, v in response.headers.items()
             if k.lower() in ("content-range", "content-type", "preference-applied", "location", "www-authenticate")}
    return f"{response.status_code} {shown} {response.text[:600]}"


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_conformance(world, case):
    world.reset()
    case = world.substitute(case)
    expect = case["expect"]
    response = world.send(case["as"], case["method"], case["path"], case.get("headers"), case.get("body"))
    where = f"{case['method']} {case['path']} → {describe(response)}"

    assert response.status_code == expect["status"], where
    for name, value in expect.get("headers", {}).items():
        if value is None:
            assert name not in response.headers, f"{name} must be absent: {where}"
        else:
            assert response.headers.get(name) == value, f"{name}: {where}"

    if response.status_code >= 400 and case["method"] != "HEAD":
        body = response.json()
        assert isinstance(body, dict) and set(body) == ERROR_KEYS, f"error keys: {where}"
        assert isinstance(body["code"], str) and isinstance(body["message"], str), where
        assert all(body[k] is None or isinstance(body[k], str) for k in ("details", "hint")), where
    if "error" in expect:
        body = response.json()
        for key, value in expect["error"].items():
            assert body[key] == value, f"error {key}: {where}"

    if expect.get("body") == "empty":
        assert response.content == b"", where
    elif "body" in expect:
        assert response.json() == expect["body"], where
    if "body_keys" in expect:
        body = response.json()
        for item in body if isinstance(body, list) else [body]:
            assert sorted(item) == sorted(expect["body_keys"]), where

    if "after" in case:
        after = case["after"]
        check = world.send(after["as"], "GET", after["path"])
        assert check.status_code == 200, f"after: {describe(check)}"
        assert check.json() == after["body"], f"after {after['path']}: {describe(check)} (case: {where})"
