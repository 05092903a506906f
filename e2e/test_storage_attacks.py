"""Storage under bad input and across its walls, on both backends, with raw HTTP where storage3 would refuse to send
the request: keys that try to leave their folder (`..`, a leading `/`, NUL), non-ASCII and over-long keys, cut-off
and file-less multipart bodies, malformed JSON, bad or missing credentials, expired, misused and tampered signed
URLs: each a 4xx in storage's error shape (a string `statusCode`), never a 5xx, and nothing stored but
`<app id>/<version>` files. Walls: another user, or the same user's other device on `device-notes`, reads nothing;
eight concurrent upserts of one key leave exactly one of them whole.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from storage3.exceptions import StorageApiError

pytest.register_assert_rewrite("storage_support")

from conftest import api_headers, new_device_secret  # noqa: E402
from storage_support import StorageApp, error_of, storage_app, storage_backend, storage_server  # noqa: E402, F401 (fixtures)
from support import raw_request  # noqa: E402

UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
STORED_FILE = re.compile(rf"^{UUID}/{UUID}$")


def secret_headers(app: StorageApp, **extra: str) -> dict[str, str]:
    return {"apikey": app.app.secret_key, "Authorization": f"Bearer {app.app.secret_key}", **extra}


def bearer(app: StorageApp, token: str, **extra: str) -> dict[str, str]:
    return {"apikey": app.app.publishable_key, "Authorization": f"Bearer {token}", **extra}


def storage_error(response, http_status: int = 400) -> dict:
    """The response is storage's error: HTTP `http_status`, a JSON object of string statusCode, code, error, message."""
    assert response.status_code == http_status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body, dict), body
    for field in ("statusCode", "code", "error", "message"):
        assert isinstance(body.get(field), str) and body[field], body
    return body


def stored_files(app: StorageApp) -> list[str]:
    """Every file under the file backend's directory, relative to it."""
    root = app.backend["dir"]
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            found.append(os.path.relpath(os.path.join(directory, name), root))
    return found


def assert_only_app_version_files(app: StorageApp) -> None:
    if app.backend["kind"] != "file":
        return
    strays = [path for path in stored_files(app) if not STORED_FILE.match(path)]
    assert strays == [], f"files outside <app id>/<version>: {strays[:10]}"
    for directory, subdirectories, _ in os.walk(app.backend["dir"]):
        depth = os.path.relpath(directory, app.backend["dir"]).count(os.sep) + (directory != app.backend["dir"])
        assert depth <= 1 or not subdirectories, f"a directory deeper than <app id>/: {directory}"


def multipart(boundary: str, data: bytes, *, fields: dict[str, str] | None = None, closed: bool = True,
              with_file: bool = True) -> bytes:
    """A multipart/form-data body as storage3 sends it: the form fields, then the file part `file`."""
    parts = b""
    for name, value in (fields or {"cacheControl": "3600"}).items():
        parts += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    if with_file:
        parts += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n'
                  f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
    if closed:
        parts += f"--{boundary}--\r\n".encode()
    return parts


# ---------------------------------------------------------------- keys


KEY_ATTACKS = {
    "dot-dot segments": "{user}/..%2F..%2F..%2Fescape.txt",
    "encoded dot-dot": "{user}/%2E%2E/%2E%2E/escape.txt",
    "dot segment": "{user}/%2E/x.txt",
    "leading slash": "%2Fetc/passwd",
    "leading slash in key": "%2F{user}/x.txt",
    "empty segment": "{user}//x.txt",
    "NUL": "{user}/a%00.txt",
    "NUL then dot-dot": "{user}/%00/%2E%2E/x.txt",
    "non-ASCII": "{user}/caf%C3%A9.png",
    "backslash": "{user}/..%5C..%5Cescape.txt",
    "overlong": "{user}/" + "k" * (1025 - 37),
}


@pytest.mark.parametrize("attack", list(KEY_ATTACKS))
def test_a_bad_key_is_refused_400_invalid_key(storage_app: StorageApp, attack: str):
    client, user_id, token = storage_app.guest()
    key = KEY_ATTACKS[attack].format(user=user_id)
    if attack == "overlong":
        assert len(key) == 1025
    base = f"{storage_app.server.url}/storage/v1"
    with httpx.Client(timeout=20) as http:
        for headers in (bearer(storage_app, token), secret_headers(storage_app)):
            upload = http.post(f"{base}/object/photos/{key}", headers={**headers, "Content-Type": "text/plain"}, content=b"escape")
            body = storage_error(upload)
            assert (body["statusCode"], body["code"]) == ("400", "InvalidKey"), body
            put = http.put(f"{base}/object/photos/{key}", headers={**headers, "Content-Type": "text/plain"}, content=b"escape")
            assert storage_error(put)["code"] == "InvalidKey"
            for method, path in [("GET", f"object/photos/{key}"), ("GET", f"object/info/photos/{key}"),
                                 ("POST", f"object/upload/sign/photos/{key}"), ("DELETE", f"object/photos/{key}")]:
                answer = http.request(method, f"{base}/{path}", headers=headers)
                assert answer.status_code < 500 and storage_error(answer)["statusCode"] == "400", (method, path, answer.text)
            signed = http.post(f"{base}/object/sign/photos/{key}", headers=headers, json={"expiresIn": 60})
            assert storage_error(signed)["statusCode"] == "400"
    assert storage_app.sql(f"select count(*) from storage.objects where app_id = '{storage_app.app.app_id}' "
                           f"and (name like '%escape%' or name like '%passwd%' or name like '%caf%')") == "0"
    assert_only_app_version_files(storage_app)


def test_a_key_of_1024_bytes_is_accepted(storage_app: StorageApp):
    """The refusal of 1,025 bytes is the key limit, not the URL's."""
    client, user_id, _ = storage_app.guest()
    key = f"{user_id}/" + "k" * (1024 - 37)
    assert len(key) == 1024
    client.storage.from_("photos").upload(key, b"long", {"content-type": "text/plain"})
    assert client.storage.from_("photos").download(key) == b"long"


def test_literal_dot_dot_and_bad_bucket_names_on_the_wire(storage_app: StorageApp):
    """Paths httpx would normalise, sent byte for byte."""
    key = storage_app.app.secret_key.encode()
    headers = [(b"apikey", key), (b"Authorization", b"Bearer " + key)]
    for target in ["/storage/v1/object/photos/a/../../../../etc/passwd", "/storage/v1/object/photos/../device-notes/x",
                   "/storage/v1/object/../../../etc/passwd", "/storage/v1/object/photos/a/%2e%2e/b"]:
        for method in ("GET", "POST"):
            answer = raw_request(storage_app.server, method, target, headers, b"{}" if method == "POST" else b"")
            assert answer.status == 400, (method, target, answer)
            body = json.loads(answer.body)
            assert body["statusCode"] == "400" and body["code"] in ("InvalidKey", "InvalidBucketName"), (target, body)
    base = f"{storage_app.server.url}/storage/v1"
    with httpx.Client(timeout=20) as http:
        for bucket in ["%2E%2E", "caf%C3%A9", "a%00b", "x" * 101, "a%2Fb"]:
            answer = http.post(f"{base}/object/{bucket}/k.txt", headers=secret_headers(storage_app, **{"Content-Type": "text/plain"}), content=b"x")
            body = storage_error(answer)
            assert body["statusCode"] == "400" and body["code"] in ("InvalidBucketName", "InvalidKey"), (bucket, body)
        for name in ["..", ".", "café", "a\x00b", "x" * 101, "a/b", "", "a\\b", "tab\tname"]:
            made = http.post(f"{base}/bucket", headers=secret_headers(storage_app), json={"name": name})
            body = storage_error(made)
            assert body["statusCode"] == "400", (name, body)
        assert storage_app.sql(f"select count(*) from storage.buckets where app_id = '{storage_app.app.app_id}' "
                               f"and id not in ('photos', 'device-notes')") == "0"
    assert_only_app_version_files(storage_app)


# ---------------------------------------------------------------- bodies


def test_a_cut_off_multipart_body_stores_nothing(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    boundary = "cutoff" + secrets.token_hex(8)
    data = secrets.token_bytes(64 * 1024)
    whole = multipart(boundary, data)
    headers = bearer(storage_app, token, **{"Content-Type": f"multipart/form-data; boundary={boundary}"})
    base = f"{storage_app.server.url}/storage/v1/object/photos/{user_id}"
    with httpx.Client(timeout=20) as http:
        no_closing = http.post(f"{base}/a.bin", headers=headers, content=multipart(boundary, data, closed=False))
        assert storage_error(no_closing)["statusCode"] == "400", no_closing.text
        half = http.post(f"{base}/b.bin", headers=headers, content=whole[: len(whole) // 2])
        assert storage_error(half)["statusCode"] == "400", half.text

        def chunks():
            yield whole[:10_000]
            yield whole[10_000:30_000]

        chunked = http.post(f"{base}/c.bin", headers=headers, content=chunks())
        assert storage_error(chunked)["statusCode"] == "400", chunked.text
        for name in ("a.bin", "b.bin", "c.bin"):
            missing = http.get(f"{base}/{name}", headers=bearer(storage_app, token))
            assert storage_error(missing)["statusCode"] == "404", name
        # The same body whole is stored, byte for byte.
        ok = http.post(f"{base}/d.bin", headers=headers, content=whole)
        assert ok.status_code == 200, ok.text
        assert http.get(f"{base}/d.bin", headers=bearer(storage_app, token)).content == data
    assert storage_app.sql(f"select count(*) from storage.objects where owner = '{user_id}'") == "1"
    assert storage_app.sql(f"select bytes from guestpass.storage_usage where user_id = '{user_id}'") == str(len(data))
    assert_only_app_version_files(storage_app)


def send_cut_off(app: StorageApp, target: str, headers: dict[str, str], body: bytes) -> bytes:
    """Sends `headers` and `body`, then closes the sending side (the client went away mid-body); what came back."""
    head = f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{app.server.port}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    received = b""
    with socket.create_connection(("127.0.0.1", app.server.port), timeout=5) as sock:
        sock.sendall(head.encode() + body)
        sock.shutdown(socket.SHUT_WR)
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    return received


def assert_cut_off_upload_stored_nothing(app: StorageApp, user_id: str, auth: dict[str, str], target: str, answer: bytes) -> None:
    assert not answer.startswith(b"HTTP/1.1 200"), answer[:300]
    time.sleep(0.3)
    with httpx.Client(timeout=20) as http:
        missing = http.get(f"{app.server.url}{target}", headers=auth)
        assert missing.status_code == 400 and missing.json()["statusCode"] == "404", (
            f"a cut-off upload is visible: HTTP {missing.status_code}, {len(missing.content)} bytes")
        # The server still serves this user.
        assert http.post(f"{app.server.url}{target}-after", headers={**auth, "Content-Type": "application/octet-stream"},
                         content=b"whole").status_code == 200
    assert app.sql(f"select count(*) from storage.objects where owner = '{user_id}'") == "1"
    assert app.sql(f"select bytes from guestpass.storage_usage where user_id = '{user_id}'") == "5"
    assert_only_app_version_files(app)


def test_a_multipart_body_cut_off_by_the_client_stores_nothing(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    auth = {"apikey": storage_app.app.publishable_key, "Authorization": f"Bearer {token}"}
    target = f"/storage/v1/object/photos/{user_id}/form.bin"
    boundary = "gone" + secrets.token_hex(6)
    form = multipart(boundary, secrets.token_bytes(100_000))[:50_000]
    # Chunked, cut inside the file part: no last chunk, the client's side closed.
    answer = send_cut_off(storage_app, target,
                          {**auth, "Content-Type": f"multipart/form-data; boundary={boundary}", "Transfer-Encoding": "chunked"},
                          f"{len(form):x}\r\n".encode() + form + b"\r\n")
    assert_cut_off_upload_stored_nothing(storage_app, user_id, auth, target, answer)


def test_a_raw_body_shorter_than_its_content_length_stores_nothing(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    auth = {"apikey": storage_app.app.publishable_key, "Authorization": f"Bearer {token}"}
    target = f"/storage/v1/object/photos/{user_id}/raw.bin"
    data = secrets.token_bytes(100_000)
    answer = send_cut_off(storage_app, target,
                          {**auth, "Content-Type": "application/octet-stream", "Content-Length": str(len(data))}, data[:40_000])
    assert_cut_off_upload_stored_nothing(storage_app, user_id, auth, target, answer)


def test_a_chunked_raw_body_without_its_last_chunk_stores_nothing(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    auth = {"apikey": storage_app.app.publishable_key, "Authorization": f"Bearer {token}"}
    target = f"/storage/v1/object/photos/{user_id}/chunked.bin"
    data = secrets.token_bytes(40_000)
    answer = send_cut_off(storage_app, target,
                          {**auth, "Content-Type": "application/octet-stream", "Transfer-Encoding": "chunked"},
                          f"{len(data):x}\r\n".encode() + data + b"\r\n")
    assert_cut_off_upload_stored_nothing(storage_app, user_id, auth, target, answer)


def test_list_prefix_and_search_wildcards_are_literal(storage_app: StorageApp):
    admin = storage_app.admin().storage.from_("photos")
    folder = "wild-" + secrets.token_hex(4)
    for key in [f"{folder}/a_b/1.txt", f"{folder}/axb/2.txt", f"{folder}/100.txt", f"{folder}/1000.txt"]:
        admin.upload(key, b"w", {"content-type": "text/plain"})
    assert [e["name"] for e in admin.list(f"{folder}/a_b")] == ["1.txt"]
    assert [e["name"] for e in admin.list(folder, {"search": "a_"})] == ["a_b"]
    assert [e["name"] for e in admin.list(folder, {"search": "10_"})] == []
    assert [e["name"] for e in admin.list(folder, {"search": "100"})] == ["100.txt", "1000.txt"]
    assert [e["name"] for e in admin.list(folder, {"search": "%"})] == []
    with pytest.raises(StorageApiError) as excinfo:
        admin.list(f"{folder}/../")
    assert error_of(excinfo)["statusCode"] == "400"


def test_a_multipart_body_without_an_upload_part_is_no_content(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    boundary = "nofile" + secrets.token_hex(8)
    headers = bearer(storage_app, token, **{"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with httpx.Client(timeout=20) as http:
        answer = http.post(f"{storage_app.server.url}/storage/v1/object/photos/{user_id}/none.bin", headers=headers,
                           content=multipart(boundary, b"", fields={"cacheControl": "3600", "metadata": "{}"}, with_file=False))
        body = storage_error(answer)
        assert (body["statusCode"], body["message"]) == ("400", "No content provided"), body
        empty = http.post(f"{storage_app.server.url}/storage/v1/object/photos/{user_id}/none.bin", headers=headers, content=b"")
        assert storage_error(empty)["statusCode"] == "400"
        no_boundary = http.post(f"{storage_app.server.url}/storage/v1/object/photos/{user_id}/none.bin",
                                headers=bearer(storage_app, token, **{"Content-Type": "multipart/form-data"}), content=b"x")
        assert storage_error(no_boundary)["statusCode"] == "400"
    assert storage_app.sql(f"select count(*) from storage.objects where owner = '{user_id}'") == "0"


@pytest.mark.parametrize("route", ["object/list/photos", "object/move", "object/copy", "object/sign/photos/{user}/x.png",
                                   "object/sign/photos", "bucket"])
def test_malformed_json_is_400_in_storages_shape(storage_app: StorageApp, route: str):
    _, user_id, token = storage_app.guest()
    url = f"{storage_app.server.url}/storage/v1/{route.format(user=user_id)}"
    with httpx.Client(timeout=20) as http:
        for content in [b"{", b"{\"prefix\": }", b"[1, 2", b"\xff\xfe{}", b"null", b"[]", b"\"text\"", b"{\"a\":1}{"]:
            answer = http.post(url, headers=bearer(storage_app, token, **{"Content-Type": "application/json"}), content=content)
            body = storage_error(answer)
            assert body["statusCode"] in ("400", "403"), (content, body)
        typed = http.post(url, headers=bearer(storage_app, token, **{"Content-Type": "application/json"}),
                          json={"prefix": 5, "limit": "many", "bucketId": 7, "sourceKey": [], "destinationKey": {},
                                "expiresIn": "soon", "paths": "x", "name": 3})
        assert storage_error(typed)["statusCode"] in ("400", "403"), typed.text


def test_remove_with_a_malformed_body_is_400(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    with httpx.Client(timeout=20) as http:
        for content in [b"{", b"{\"prefixes\": \"x\"}", b"{\"prefixes\": []}", b"{}"]:
            answer = http.request("DELETE", f"{storage_app.server.url}/storage/v1/object/photos",
                                  headers=bearer(storage_app, token, **{"Content-Type": "application/json"}), content=content)
            assert storage_error(answer)["statusCode"] == "400", (content, answer.text)


# ---------------------------------------------------------------- credentials


def test_a_bad_bearer_token_is_http_400_with_status_403(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    base = f"{storage_app.server.url}/storage/v1"
    header, payload, signature = token.split(".")
    forged = f"{header}.{payload}.{signature[:-8]}{'A' * 8 if not signature.endswith('A' * 8) else 'B' * 8}"
    with httpx.Client(timeout=20) as http:
        for bad in ["not-a-jwt", "a.b.c", forged]:
            headers = bearer(storage_app, bad)
            for method, path, body in [("POST", "object/list/photos", {"prefix": user_id}),
                                       ("POST", f"object/photos/{user_id}/bad.txt", None),
                                       ("GET", "bucket", None),
                                       ("POST", f"object/sign/photos/{user_id}/x.png", {"expiresIn": 60})]:
                answer = http.request(method, f"{base}/{path}", headers=headers, json=body) if body is not None else \
                    http.request(method, f"{base}/{path}", headers=headers, content=b"x" if method == "POST" else None)
                error = storage_error(answer)
                assert (error["statusCode"], error["error"]) == ("403", "Unauthorized"), (bad, path, error)
    assert storage_app.sql(f"select count(*) from storage.objects where name = '{user_id}/bad.txt'") == "0"


def test_no_api_key_is_refused_in_storages_shape(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    base = f"{storage_app.server.url}/storage/v1"
    with httpx.Client(timeout=20) as http:
        for method, path, body in [("POST", "object/list/photos", {"prefix": ""}), ("GET", "bucket", None),
                                   ("POST", f"object/photos/{user_id}/nokey.txt", None),
                                   ("GET", f"object/photos/{user_id}/x.png", None)]:
            for headers in ({}, {"Authorization": f"Bearer {token}"}):
                answer = http.request(method, f"{base}/{path}", headers=headers, json=body) if body is not None else \
                    http.request(method, f"{base}/{path}", headers=headers, content=b"x" if method == "POST" else None)
                assert 400 <= answer.status_code < 500, (path, headers, answer.status_code, answer.text)
                error = storage_error(answer, answer.status_code)
                assert error["statusCode"].startswith("4"), error
    assert storage_app.sql(f"select count(*) from storage.objects where name = '{user_id}/nokey.txt'") == "0"


# ---------------------------------------------------------------- signed URLs


def test_signed_urls_expire_and_keep_to_their_scope(storage_app: StorageApp):
    client, user_id, token = storage_app.guest()
    photos = client.storage.from_("photos")
    data = secrets.token_bytes(333)
    photos.upload(f"{user_id}/signed.png", data, {"content-type": "image/png"})
    # Expiry is whole seconds (exp = the signing second + expiresIn, as Supabase's JWT): 2 s is valid for at least 1 s.
    signed_at = time.monotonic()
    short = photos.create_signed_url(f"{user_id}/signed.png", 2)["signedURL"]
    download_token = re.search(r"[?&]token=([^&]+)", short).group(1)
    upload = photos.create_signed_upload_url(f"{user_id}/upload.png")
    upload_token = upload["token"]
    base = f"{storage_app.server.url}/storage/v1"
    with httpx.Client(timeout=20) as http:
        assert http.get(short).content == data
        # A download token on the upload route, for the same key and for the key it names: refused, nothing stored.
        for key in ("signed.png", "upload.png"):
            misused = http.put(f"{base}/object/upload/sign/photos/{user_id}/{key}?token={download_token}",
                               headers={"Content-Type": "image/png"}, content=b"planted")
            assert storage_error(misused)["code"] == "InvalidSignature", misused.text
        # An upload token on the download route: refused.
        wrong_way = http.get(f"{base}/object/sign/photos/{user_id}/upload.png?token={upload_token}")
        assert storage_error(wrong_way)["code"] == "InvalidSignature"
        wrong_way = http.get(f"{base}/object/sign/photos/{user_id}/signed.png?token={upload_token}")
        assert storage_error(wrong_way)["code"] == "InvalidSignature"
        assert photos.download(f"{user_id}/signed.png") == data
        assert photos.exists(f"{user_id}/upload.png") is False
        # Expired: one short wait.
        time.sleep(max(0.0, 3.05 - (time.monotonic() - signed_at)))
        expired = http.get(short)
        body = storage_error(expired)
        assert (body["statusCode"], body["code"]) == ("400", "InvalidJWT"), body
        # The upload token still works for its own route.
        assert http.put(f"{base}/object/upload/sign/photos/{user_id}/upload.png?token={upload_token}",
                        headers={"Content-Type": "image/png"}, content=b"up").status_code == 200
    assert photos.download(f"{user_id}/upload.png") == b"up"


def tampered(token: str) -> list[str]:
    """Variants of `token` with one character changed in the middle of each dot-separated part, cut, or doubled."""
    variants = []
    parts = token.split(".")
    for index, part in enumerate(parts):
        middle = len(part) // 2
        swapped = "B" if part[middle] != "B" else "C"
        changed = parts[:index] + [part[:middle] + swapped + part[middle + 1:]] + parts[index + 1:]
        variants.append(".".join(changed))
    variants += [token[:-10], token + "x", token + "." + token, "", ".", parts[0]]
    return variants


def test_a_tampered_token_is_invalid_signature(storage_app: StorageApp):
    client, user_id, _ = storage_app.guest()
    photos = client.storage.from_("photos")
    photos.upload(f"{user_id}/t.png", b"tamper", {"content-type": "image/png"})
    signed = photos.create_signed_url(f"{user_id}/t.png", 60)["signedURL"]
    token = re.search(r"[?&]token=([^&]+)", signed).group(1)
    upload_token = photos.create_signed_upload_url(f"{user_id}/t2.png")["token"]
    base = f"{storage_app.server.url}/storage/v1"
    with httpx.Client(timeout=20) as http:
        assert http.get(f"{base}/object/sign/photos/{user_id}/t.png?token={token}").content == b"tamper"
        for bad in tampered(token):
            answer = http.get(f"{base}/object/sign/photos/{user_id}/t.png", params={"token": bad})
            body = storage_error(answer)
            assert (body["statusCode"], body["code"], body["error"]) == ("400", "InvalidSignature", "InvalidSignature"), (bad, body)
        for bad in tampered(upload_token):
            answer = http.put(f"{base}/object/upload/sign/photos/{user_id}/t2.png", params={"token": bad},
                              headers={"Content-Type": "image/png"}, content=b"planted")
            body = storage_error(answer)
            assert (body["statusCode"], body["code"]) == ("400", "InvalidSignature"), (bad, body)
        no_token = http.get(f"{base}/object/sign/photos/{user_id}/t.png")
        assert storage_error(no_token)["code"] == "InvalidSignature"
    assert photos.exists(f"{user_id}/t2.png") is False


# ---------------------------------------------------------------- walls


def test_device_notes_are_read_only_by_the_uploading_device(storage_app: StorageApp):
    first, user_id, first_token = storage_app.guest()
    stranger, stranger_id, _ = storage_app.guest()
    notes = first.storage.from_("device-notes")
    notes.upload(f"{user_id}/note.txt", b"only this phone", {"content-type": "text/plain"})
    assert notes.download(f"{user_id}/note.txt") == b"only this phone"
    # Another guest: nothing.
    with pytest.raises(StorageApiError) as excinfo:
        stranger.storage.from_("device-notes").download(f"{user_id}/note.txt")
    assert error_of(excinfo)["statusCode"] == "404"
    assert stranger.storage.from_("device-notes").list(user_id) == []
    assert stranger.storage.from_("device-notes").remove([f"{user_id}/note.txt"]) == []
    with pytest.raises(StorageApiError) as excinfo:
        stranger.storage.from_("device-notes").upload(f"{user_id}/planted.txt", b"x", {"content-type": "text/plain"})
    assert error_of(excinfo)["statusCode"] == "403"

    # The same user on a second device (a transfer code redeemed in the sign-up call).
    with httpx.Client(timeout=20) as http:
        made = http.post(storage_app.server.url + "/v1/devices/transfer-code", headers=bearer(storage_app, first_token))
        assert made.status_code == 200, made.text
        moved = http.post(storage_app.server.url + "/auth/v1/signup", headers=api_headers(storage_app.app),
                          json={"data": {"device_id": new_device_secret(), "transfer_code": made.json()["code"]}})
        assert moved.status_code == 200, moved.text
        second_token = moved.json()["access_token"]
        assert moved.json()["user"]["id"] == user_id
        base = f"{storage_app.server.url}/storage/v1"
        read = http.get(f"{base}/object/device-notes/{user_id}/note.txt", headers=bearer(storage_app, second_token))
        assert storage_error(read)["statusCode"] == "404", read.text
        listed = http.post(f"{base}/object/list/device-notes", headers=bearer(storage_app, second_token), json={"prefix": user_id})
        assert listed.status_code == 200 and listed.json() == []
        removed = http.request("DELETE", f"{base}/object/device-notes", headers=bearer(storage_app, second_token),
                               json={"prefixes": [f"{user_id}/note.txt"]})
        assert removed.status_code == 200 and removed.json() == []
        signed = http.post(f"{base}/object/sign/device-notes/{user_id}/note.txt", headers=bearer(storage_app, second_token),
                           json={"expiresIn": 60})
        assert storage_error(signed)["statusCode"] == "404"
        # Its own note is its own: the first device cannot read that one.
        own = http.post(f"{base}/object/device-notes/{user_id}/second.txt",
                        headers=bearer(storage_app, second_token, **{"Content-Type": "text/plain"}), content=b"second phone")
        assert own.status_code == 200, own.text
        assert http.get(f"{base}/object/device-notes/{user_id}/second.txt", headers=bearer(storage_app, second_token)).content == b"second phone"
    with pytest.raises(StorageApiError) as excinfo:
        notes.download(f"{user_id}/second.txt")
    assert error_of(excinfo)["statusCode"] == "404"
    # The first device still has its note, and removes it.
    assert notes.download(f"{user_id}/note.txt") == b"only this phone"
    assert [r["name"] for r in notes.remove([f"{user_id}/note.txt"])] == [f"{user_id}/note.txt"]


def test_concurrent_upserts_leave_exactly_one_payload_whole(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    payloads = [bytes([i]) * 1024 + secrets.token_bytes(63 * 1024) for i in range(8)]
    url = f"{storage_app.server.url}/storage/v1/object/photos/{user_id}/race.bin"
    headers = bearer(storage_app, token, **{"Content-Type": "application/octet-stream", "x-upsert": "true"})
    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=8)) as http, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda data: http.post(url, headers=headers, content=data), payloads))
        assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers if a.status_code != 200]
        final = http.get(url, headers=bearer(storage_app, token))
        assert final.status_code == 200
        assert final.content in payloads, "the stored object is not one whole payload"
        assert final.headers["content-length"] == str(64 * 1024)
    assert storage_app.sql(f"select count(*) from storage.objects where owner = '{user_id}'") == "1"
    assert storage_app.sql(f"select bytes, objects from guestpass.storage_usage where user_id = '{user_id}'") == f"{64 * 1024}|1"


def test_concurrent_creates_of_one_key_leave_one_winner_whole(storage_app: StorageApp):
    _, user_id, token = storage_app.guest()
    payloads = [bytes([i]) * 1024 + secrets.token_bytes(63 * 1024) for i in range(8)]
    url = f"{storage_app.server.url}/storage/v1/object/photos/{user_id}/first.bin"
    headers = bearer(storage_app, token, **{"Content-Type": "application/octet-stream"})
    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=8)) as http, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda data: http.post(url, headers=headers, content=data), payloads))
        winners = [i for i, a in enumerate(answers) if a.status_code == 200]
        assert len(winners) == 1, [(a.status_code, a.text[:100]) for a in answers]
        for i, answer in enumerate(answers):
            if i not in winners:
                assert storage_error(answer)["statusCode"] == "409", answer.text
        assert http.get(url, headers=bearer(storage_app, token)).content == payloads[winners[0]]
    assert storage_app.sql(f"select bytes, objects from guestpass.storage_usage where user_id = '{user_id}'") == f"{64 * 1024}|1"


def test_nothing_is_stored_outside_the_app_version_layout(storage_app: StorageApp):
    """After every attack above (the last test of the module): only `<app id>/<version>` files, no partial file."""
    if storage_app.backend["kind"] != "file":
        pytest.skip("the file backend's directory is walked; S3 keys are the backend's own")
    assert stored_files(storage_app), "the walk found no file at all: it looks in the wrong place"
    assert_only_app_version_files(storage_app)
