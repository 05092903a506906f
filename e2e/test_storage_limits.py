"""Storage's guarantees on both backends: each app's limits on one upload and on what one user may keep, exact under
concurrent uploads; nothing acknowledged is lost and nothing half-written is visible when the server is killed (kill
-9) mid-upload; the bytes of removed, replaced and orphaned versions go (the sweeper at once, `guestpass prune` after
the grace period).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest

pytest.register_assert_rewrite("storage_support")

from conftest import run  # noqa: E402
from storage_support import StorageApp, server_env, storage_app, storage_backend, storage_server  # noqa: E402, F401 (fixtures)
from support import create_app  # noqa: E402
from email_support import configure_app  # noqa: E402


def limited_app(storage_app: StorageApp, name: str, **limits) -> StorageApp:
    app = create_app(storage_app.database, f"{name}-{storage_app.backend['kind']}")
    configure_app(storage_app.database, app, **limits)
    limited = StorageApp(app=app, server=storage_app.server, database=storage_app.database, backend=storage_app.backend)
    limited.admin().storage.create_bucket("photos")
    return limited


def upload(http: httpx.Client, app: StorageApp, token: str, key: str, data: bytes) -> httpx.Response:
    return http.post(
        f"{app.server.url}/storage/v1/object/photos/{key}",
        headers={"apikey": app.app.publishable_key, "Authorization": f"Bearer {token}", "Content-Type": "image/png"},
        content=data,
    )


def test_one_upload_is_held_to_the_apps_limit(storage_app: StorageApp):
    app = limited_app(storage_app, "upload-limit", storage_upload_bytes_limit=1000)
    _, user_id, token = app.guest()
    with httpx.Client(timeout=30) as http:
        assert upload(http, app, token, f"{user_id}/ok.png", b"x" * 1000).status_code == 200
        refused = upload(http, app, token, f"{user_id}/big.png", b"x" * 1001)
        assert refused.status_code == 400 and refused.json()["statusCode"] == "413" and refused.json()["code"] == "EntityTooLarge"
        # Multipart (the size is only known while streaming): the same answer, and nothing stored.
        files = {"file": ("big.png", b"y" * 5000, "image/png")}
        streamed = http.post(
            f"{app.server.url}/storage/v1/object/photos/{user_id}/big2.png",
            headers={"apikey": app.app.publishable_key, "Authorization": f"Bearer {token}"}, files=files)
        assert streamed.json()["statusCode"] == "413"
    assert app.sql(f"select count(*) from storage.objects where app_id = '{app.app.app_id}'") == "1"


def test_a_users_bytes_are_capped_exactly_under_concurrent_uploads(storage_app: StorageApp):
    app = limited_app(storage_app, "user-bytes", storage_user_bytes_limit=10_000)
    _, user_id, token = app.guest()
    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=20)) as http, ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda i: upload(http, app, token, f"{user_id}/{i}.png", secrets.token_bytes(1000)), range(20)))
    ok = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code != 200]
    assert len(ok) == 10, [a.text for a in refused][:3]
    assert all(a.json()["statusCode"] == "413" and a.json()["code"] == "QuotaExceeded" for a in refused)
    assert app.sql(f"select bytes, objects from guestpass.storage_usage where user_id = '{user_id}'") == "10000|10"
    # Removing frees the room again.
    with httpx.Client(timeout=30) as http:
        removed = http.request(
            "DELETE", f"{app.server.url}/storage/v1/object/photos",
            headers={"apikey": app.app.publishable_key, "Authorization": f"Bearer {token}"},
            json={"prefixes": [f"{user_id}/{i}.png" for i in range(20)]})
        assert len(removed.json()) == 10
        assert upload(http, app, token, f"{user_id}/again.png", b"z" * 1000).status_code == 200


def test_a_users_objects_are_capped_exactly(storage_app: StorageApp):
    app = limited_app(storage_app, "user-objects", storage_user_objects_limit=3)
    _, user_id, token = app.guest()
    with httpx.Client(timeout=60) as http, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: upload(http, app, token, f"{user_id}/{i}.png", b"p"), range(8)))
    assert sorted(a.status_code for a in answers).count(200) == 3
    # Replacing one of them (upsert) is not a new object.
    key = next(f"{user_id}/{i}.png" for i, a in enumerate(answers) if a.status_code == 200)
    with httpx.Client(timeout=30) as http:
        replaced = http.put(
            f"{app.server.url}/storage/v1/object/photos/{key}",
            headers={"apikey": app.app.publishable_key, "Authorization": f"Bearer {token}", "Content-Type": "image/png"}, content=b"q")
        assert replaced.status_code == 200, replaced.text


def _stored_keys(storage_app: StorageApp, app_id: str) -> set[str]:
    """The backend keys holding bytes of `app_id` (file backend: files under its directory)."""
    root = os.path.join(storage_app.backend["dir"], app_id)
    found = set()
    for directory, _, files in os.walk(root):
        for name in files:
            found.add(os.path.relpath(os.path.join(directory, name), storage_app.backend["dir"]))
    return found


def _wait(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_replaced_and_removed_versions_lose_their_bytes(storage_app: StorageApp):
    """The sweeper's rows drain (a row goes only after its bytes' delete succeeded); on the file backend the files
    themselves are checked too."""
    client, user_id, token = storage_app.guest()
    photos = client.storage.from_("photos")
    photos.upload(f"{user_id}/v.png", b"one")
    on_file = storage_app.backend["kind"] == "file"
    version = storage_app.sql(f"select version from storage.objects where name = '{user_id}/v.png'")
    key = f"{storage_app.app.app_id}/{version}"
    assert not on_file or key in _stored_keys(storage_app, storage_app.app.app_id)
    photos.update(f"{user_id}/v.png", b"two")
    assert photos.download(f"{user_id}/v.png") == b"two"
    swept = f"select count(*) from guestpass.storage_sweep where app_id = '{storage_app.app.app_id}' and kind = 'replaced'"
    age = f"update guestpass.storage_sweep set not_before = now() - interval '1 second' where app_id = '{storage_app.app.app_id}'" \
        " and kind = 'replaced'"
    # The replaced version stays 30 s (a download in flight finishes from it): a download begun before the change
    # still reads the old bytes whole.
    assert storage_app.sql(swept) == "1"
    # Not due for about 30 s (what the sweep's claim compares), so its bytes are still there.
    due_in = f"select round(extract(epoch from not_before - now())) from guestpass.storage_sweep where key = '{key}'"
    assert 25 <= int(storage_app.sql(due_in)) <= 30
    assert not on_file or key in _stored_keys(storage_app, storage_app.app.app_id)
    # Aged past the 30 s, the sweeper deletes the replaced version's bytes within its interval (2 s).
    storage_app.sql(age)
    assert _wait(lambda: storage_app.sql(swept) == "0")
    assert not on_file or key not in _stored_keys(storage_app, storage_app.app.app_id)
    photos.remove([f"{user_id}/v.png"])
    assert storage_app.sql(swept) == "1"
    storage_app.sql(age)
    assert _wait(lambda: storage_app.sql(swept) == "0")
    assert not on_file or _stored_keys(storage_app, storage_app.app.app_id) == set()


def test_kill_9_mid_upload_leaves_nothing_visible_and_prune_reclaims_the_bytes(storage_app: StorageApp, start_server):
    server = start_server(f"storage-crash-{storage_app.backend['kind']}", **server_env(storage_app.backend))
    app = StorageApp(app=storage_app.app, server=server, database=storage_app.database, backend=storage_app.backend)
    _, user_id, token = app.guest()
    # An acknowledged upload, then a second one cut by kill -9 while its body streams.
    with httpx.Client(timeout=30) as http:
        kept = secrets.token_bytes(200_000)
        assert upload(http, app, token, f"{user_id}/kept.png", kept).status_code == 200
    before = int(app.sql("select count(*) from guestpass.storage_sweep where kind = 'upload'"))
    target = urlsplit(server.url)
    sock = socket.create_connection((target.hostname, target.port))
    total = 8 * 1024 * 1024
    sock.sendall(
        (f"POST /storage/v1/object/photos/{user_id}/cut.png HTTP/1.1\r\nHost: x\r\napikey: {app.app.publishable_key}\r\n"
         f"Authorization: Bearer {token}\r\nContent-Type: image/png\r\nContent-Length: {total}\r\n\r\n").encode())
    sock.sendall(secrets.token_bytes(total // 2))
    # Its reservation is committed before any byte is stored: wait for it, then kill.
    assert _wait(lambda: int(app.sql("select count(*) from guestpass.storage_sweep where kind = 'upload'")) > before)
    time.sleep(0.3)
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=10)
    sock.close()
    server.start()
    with httpx.Client(timeout=30) as http:
        headers = {"apikey": app.app.publishable_key, "Authorization": f"Bearer {token}"}
        assert http.get(f"{server.url}/storage/v1/object/photos/{user_id}/kept.png", headers=headers).content == kept
        cut = http.get(f"{server.url}/storage/v1/object/photos/{user_id}/cut.png", headers=headers)
        assert cut.json()["statusCode"] == "404"
    orphans = app.sql("select key from guestpass.storage_sweep where kind = 'upload' and claimed_at is null").split()
    assert orphans
    # Past the grace period (aged, not waited for), `guestpass prune` deletes the orphaned bytes and their rows.
    app.sql("update guestpass.storage_sweep set not_before = now() - interval '1 second' where kind = 'upload'")
    env = {"DATABASE_URL": app.database.super_url, **server_env(app.backend)}
    counts = json.loads(run([app.database.bin, "prune", "--json"], env=env))
    assert counts["removed"]["storage_bytes"] >= 1
    assert app.sql("select count(*) from guestpass.storage_sweep where kind = 'upload'") == "0"
    if app.backend["kind"] == "file":
        leftover = [k for k in _stored_keys(app, app.app.app_id) if any(o.split("/")[1] in k for o in orphans)]
        assert leftover == []
