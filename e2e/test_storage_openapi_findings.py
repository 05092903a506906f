"""Storage findings of the OpenAPI fuzzing (e2e/test_openapi.py, schemathesis `--checks all`), each a regression test of
the server fix it led to, on both backends.
"""

from __future__ import annotations

import httpx
import pytest

pytest.register_assert_rewrite("storage_support")

from storage_support import StorageApp, storage_app, storage_backend, storage_server  # noqa: E402, F401 (fixtures)


def storage_error(response, http_status: int) -> dict:
    """Storage's error body at HTTP `http_status`: string statusCode, code, error, message."""
    assert response.status_code == http_status, (response.status_code, response.text[:300])
    body = response.json()
    assert sorted(body) == ["code", "error", "message", "statusCode"] and all(isinstance(v, str) for v in body.values()), body
    return body


@pytest.mark.parametrize("query", ["sortOrder=AAA", "sortOrder=DESC", "sortColumn=owner", "limit=abc", "limit=0",
                                   "offset=-1", "offset=1.5"])
def test_a_bucket_list_query_outside_its_schema_is_400(storage_app: StorageApp, query: str):
    """Found by schemathesis: `GET /bucket?sortOrder=AAA` (and a `limit` that is not a number) was ignored, 200 with every
    bucket, where the real server's query schema refuses it."""
    headers = {"apikey": storage_app.app.secret_key, "Authorization": f"Bearer {storage_app.app.secret_key}"}
    with httpx.Client(timeout=20) as http:
        answer = http.get(f"{storage_app.server.url}/storage/v1/bucket?{query}", headers=headers)
        assert storage_error(answer, 400)["code"] == "InvalidRequest"
        ordered = http.get(f"{storage_app.server.url}/storage/v1/bucket?sortColumn=id&sortOrder=desc&limit=1&offset=0",
                           headers=headers)
        assert ordered.status_code == 200 and len(ordered.json()) == 1, ordered.text[:300]


def test_no_or_an_unknown_api_key_is_http_401_as_supabases_gateway_answers(storage_app: StorageApp):
    """Found by schemathesis (ignored_auth): without an API key storage answered HTTP 400 (statusCode "403"); on
    Supabase the gateway refuses a missing or unknown key with HTTP 401 before storage runs. A bad access token with a
    good key stays storage's own refusal: HTTP 400 with statusCode "403"."""
    _, user_id, token = storage_app.guest()
    base = f"{storage_app.server.url}/storage/v1"
    with httpx.Client(timeout=20) as http:
        for headers in ({}, {"Authorization": f"Bearer {token}"}, {"apikey": "sb_publishable_unknown"}):
            for method, path in [("GET", "bucket"), ("POST", "object/list/photos"), ("GET", f"object/photos/{user_id}/x.png")]:
                answer = http.request(method, f"{base}/{path}", headers=headers, json={} if method == "POST" else None)
                body = storage_error(answer, 401)
                assert (body["statusCode"], body["error"]) == ("401", "Unauthorized"), (headers, path, body)
        bad_token = http.get(f"{base}/bucket", headers={"apikey": storage_app.app.publishable_key, "Authorization": "Bearer a.b.c"})
        assert storage_error(bad_token, 400)["statusCode"] == "403"


@pytest.mark.parametrize(("path", "allow"), [("object/list/photos", "POST"), ("object/sign/photos", "POST"),
                                             ("object/photos", "DELETE"), ("object/photos/a.png", "GET, HEAD, POST, PUT, DELETE")])
def test_an_unrouted_method_on_an_object_path_allows_that_paths_methods(storage_app: StorageApp, path: str, allow: str):
    """Found by schemathesis (ST205): `OPTIONS /storage/v1/object/list/b` answered 405 with the methods of
    `/object/{bucket}/{path}`, the template it also matches, picked in an order that changed from run to run; the
    template with the more literal segments is the path's."""
    headers = {"apikey": storage_app.app.secret_key}
    with httpx.Client(timeout=20) as http:
        for method in ("OPTIONS", "PATCH", "TRACE"):
            answer = http.request(method, f"{storage_app.server.url}/storage/v1/{path}", headers=headers)
            assert answer.status_code == 405, (method, path, answer.status_code, answer.text[:300])
            assert answer.headers["allow"] == allow, (method, path, answer.headers["allow"])
