"""Storage e2e: the two backends every storage test runs against (the file system, and a real S3 store: SeaweedFS
started by scripts/seaweedfs), a server per backend, an app per module with the example app's `photos` and
`device-notes` buckets, and the official clients (storage3 through supabase-py) as a guest, as the app's backend
(secret key) and as anon.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from supabase import ClientOptions, create_client

from conftest import App, Database, Server, new_device_secret, psql
from support import create_app

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["file", "s3"]


def _seaweedfs_env(directory: Path) -> dict[str, str]:
    """Starts SeaweedFS (scripts/seaweedfs) in `directory`; its endpoint and keys."""
    subprocess.run([str(ROOT / "scripts" / "seaweedfs"), "start", str(directory)], check=True, timeout=180, capture_output=True)
    env: dict[str, str] = {}
    for line in (directory / "env").read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            env[name] = value.strip().strip("'\"")
    return env


@pytest.fixture(scope="session", params=BACKENDS)
def storage_backend(request, tmp_path_factory) -> dict[str, str]:
    """The environment of a server storing bytes on `file` (a directory) or `s3` (SeaweedFS, path-style, SigV4)."""
    kind = request.param
    if kind == "file":
        directory = tmp_path_factory.mktemp("storage-file")
        yield {"GUESTPASS_STORAGE_BACKEND": "file", "GUESTPASS_STORAGE_DIR": str(directory), "kind": "file", "dir": str(directory)}
        return
    directory = tmp_path_factory.mktemp("seaweedfs")
    s3 = _seaweedfs_env(directory)
    try:
        yield {
            "GUESTPASS_STORAGE_BACKEND": "s3",
            "GUESTPASS_S3_ENDPOINT": s3["GUESTPASS_TEST_S3_ENDPOINT"],
            "GUESTPASS_S3_BUCKET": "guestpass-e2e",
            "GUESTPASS_S3_ACCESS_KEY_ID": s3["GUESTPASS_TEST_S3_ACCESS_KEY"],
            "GUESTPASS_S3_SECRET_ACCESS_KEY": s3["GUESTPASS_TEST_S3_SECRET_KEY"],
            "GUESTPASS_S3_PART_SIZE": str(5 * 1024 * 1024),
            "kind": "s3",
            "dir": str(directory),
        }
    finally:
        subprocess.run([str(ROOT / "scripts" / "seaweedfs"), "stop", str(directory)], timeout=60, capture_output=True)


def server_env(backend: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in backend.items() if k.startswith("GUESTPASS_")}


@pytest.fixture(scope="session")
def storage_server(start_server, storage_backend) -> Server:
    return start_server(
        f"storage-{storage_backend['kind']}",
        GUESTPASS_SIGNUP_BURST="1000",
        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
        **server_env(storage_backend),
    )


@dataclasses.dataclass
class StorageApp:
    app: App
    server: Server
    database: Database
    backend: dict[str, str]

    def client(self, key: str | None = None):
        """supabase-py's client with `key` (default the publishable key); no auto refresh."""
        options = ClientOptions(auto_refresh_token=False, persist_session=False)
        return create_client(self.server.url, key or self.app.publishable_key, options)

    def admin(self):
        """The app's backend: the secret key."""
        return self.client(self.app.secret_key)

    def guest(self):
        """A new signed-in guest: (client, user id, access token)."""
        client = self.client()
        response = client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
        assert response.session is not None
        return client, response.user.id, response.session.access_token

    def sql(self, statement: str) -> str:
        return psql(self.database.super_url, statement)


@pytest.fixture(scope="module")
def storage_app(request, database, storage_server, storage_backend) -> StorageApp:
    """A new app per module and backend, with the example buckets `photos` (private) and `device-notes`."""
    app = create_app(database, f"storage-{request.module.__name__}-{storage_backend['kind']}")
    made = StorageApp(app=app, server=storage_server, database=database, backend=storage_backend)
    admin = made.admin()
    admin.storage.create_bucket("photos")
    admin.storage.create_bucket("device-notes")
    return made


def error_of(excinfo) -> dict:
    """storage3's StorageApiError as {statusCode, error, message}."""
    error = excinfo.value
    return {"statusCode": str(getattr(error, "status", "")), "error": getattr(error, "code", None), "message": getattr(error, "message", str(error))}
