"""Storage buckets through storage3 (supabase-py) unchanged, with the app's secret key, on both backends: create
(public or private, a size limit as bytes or text, MIME types), get and list in the shapes the SDKs decode, update,
empty and delete with Supabase's answers and errors; every app's buckets are its own (another app's secret key sees,
reads, lists, signs and deletes none of them), a public bucket's name is one across apps, guests make no buckets;
public buckets serve with no headers at all; a bucket's size limit and MIME types hold on every upload.
"""

from __future__ import annotations

import os
import re
import secrets
import time

import httpx
import pytest
from storage3.exceptions import StorageApiError

pytest.register_assert_rewrite("storage_support")

from storage_support import StorageApp, error_of, storage_app, storage_backend, storage_server  # noqa: E402, F401 (fixtures)
from email_support import configure_app  # noqa: E402
from support import create_app  # noqa: E402

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
BUCKET_FIELDS = {"id", "name", "owner", "public", "created_at", "updated_at", "file_size_limit", "allowed_mime_types"}
BUCKET_NOT_FOUND = {"statusCode": "404", "error": "Bucket not found", "message": "Bucket not found"}


def unique(prefix: str) -> str:
    """A bucket name no other test (nor the other backend's run on the same database) uses: public names are one
    across apps."""
    return f"{prefix}-{secrets.token_hex(4)}"


def storage_headers(key: str, **extra: str) -> dict[str, str]:
    return {"apikey": key, "Authorization": f"Bearer {key}", **extra}


def raw_bucket(storage_app: StorageApp, bucket: str) -> httpx.Response:
    return httpx.get(f"{storage_app.server.url}/storage/v1/bucket/{bucket}", headers=storage_headers(storage_app.app.secret_key), timeout=20)


def other_app(storage_app: StorageApp, name: str) -> StorageApp:
    """A second app on the same server and database."""
    app = create_app(storage_app.database, f"{name}-{storage_app.backend['kind']}-{secrets.token_hex(3)}")
    return StorageApp(app=app, server=storage_app.server, database=storage_app.database, backend=storage_app.backend)


def raises(call) -> dict:
    with pytest.raises(StorageApiError) as excinfo:
        call()
    return error_of(excinfo)


def test_create_get_and_list_in_the_shapes_the_sdks_decode(storage_app: StorageApp):
    admin = storage_app.admin().storage
    private, public = unique("plain"), unique("open")
    assert admin.create_bucket(private) == {"name": private}
    assert admin.create_bucket(public, options={"public": True, "file_size_limit": 2048, "allowed_mime_types": ["image/png", "image/*"]}) == {"name": public}

    raw = raw_bucket(storage_app, private)
    assert raw.status_code == 200, raw.text
    body = raw.json()
    assert BUCKET_FIELDS <= set(body), body
    assert body["id"] == body["name"] == private
    # The secret key's bucket has no owner: "" (Swift's Bucket.owner is a non-optional String), never null.
    assert body["owner"] == "" and body["public"] is False
    assert body["file_size_limit"] is None and body["allowed_mime_types"] is None
    assert ISO.match(body["created_at"]) and ISO.match(body["updated_at"]), body

    got = admin.get_bucket(public)
    assert (got.id, got.name, got.owner, got.public) == (public, public, "", True)
    assert got.file_size_limit == 2048 and got.allowed_mime_types == ["image/png", "image/*"]
    raw_public = raw_bucket(storage_app, public).json()
    assert ISO.match(raw_public["created_at"]) and ISO.match(raw_public["updated_at"])

    listed = {b.id: b for b in admin.list_buckets()}
    assert {private, public, "photos", "device-notes"} <= set(listed)
    assert listed[public].public is True and listed[private].public is False
    raw_list = httpx.get(f"{storage_app.server.url}/storage/v1/bucket", headers=storage_headers(storage_app.app.secret_key), timeout=20)
    assert raw_list.status_code == 200
    for entry in raw_list.json():
        assert BUCKET_FIELDS <= set(entry) and isinstance(entry["owner"], str), entry
        assert ISO.match(entry["created_at"]) and ISO.match(entry["updated_at"]), entry

    assert raises(lambda: admin.get_bucket(unique("missing"))) == BUCKET_NOT_FOUND


def test_size_limit_as_bytes_or_text(storage_app: StorageApp):
    admin = storage_app.admin().storage
    as_int, as_text = unique("limit-int"), unique("limit-text")
    admin.create_bucket(as_int, options={"file_size_limit": 1024})
    admin.create_bucket(as_text, options={"file_size_limit": "1kb"})
    assert admin.get_bucket(as_int).file_size_limit == 1024
    assert admin.get_bucket(as_text).file_size_limit in (1000, 1024)
    admin.update_bucket(as_text, {"file_size_limit": "2MB"})
    assert admin.get_bucket(as_text).file_size_limit in (2_000_000, 2 * 1024 * 1024)
    for bad_limit in ["lots", -1, "1.5kb", "kb", 1.5]:
        bad = raises(lambda: admin.create_bucket(unique("limit-bad"), options={"file_size_limit": bad_limit}))
        assert bad["statusCode"] == "400", (bad_limit, bad)
    for bad_types in [["png"], [""], ["image/"], "image/png", [5]]:
        bad = raises(lambda: admin.create_bucket(unique("types-bad"), options={"allowed_mime_types": bad_types}))
        assert bad["statusCode"] == "400", (bad_types, bad)
    assert not [b.id for b in admin.list_buckets() if b.id.startswith(("limit-bad", "types-bad"))]


def test_duplicate_create_is_409(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("dup")
    admin.create_bucket(name)
    assert raises(lambda: admin.create_bucket(name)) == {
        "statusCode": "409", "error": "Duplicate", "message": "The resource already exists"}
    assert raises(lambda: admin.create_bucket("photos"))["statusCode"] == "409"


def test_update_changes_publicity_limits_and_types(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("upd")
    admin.create_bucket(name)
    before = raw_bucket(storage_app, name).json()
    time.sleep(0.01)
    assert admin.update_bucket(name, {"public": True, "file_size_limit": 5000, "allowed_mime_types": ["text/plain"]}) == {
        "message": "Successfully updated"}
    after = raw_bucket(storage_app, name).json()
    assert after["public"] is True and after["file_size_limit"] == 5000 and after["allowed_mime_types"] == ["text/plain"]
    assert after["created_at"] == before["created_at"] and after["updated_at"] > before["updated_at"], (before, after)
    admin.update_bucket(name, {"public": False, "file_size_limit": None, "allowed_mime_types": None})
    cleared = admin.get_bucket(name)
    assert cleared.public is False and cleared.file_size_limit is None and cleared.allowed_mime_types is None
    assert raises(lambda: admin.update_bucket(unique("missing"), {"public": True})) == BUCKET_NOT_FOUND


def test_empty_removes_every_object_and_then_their_bytes(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("empty")
    admin.create_bucket(name)
    files = admin.from_(name)
    for key in ["a.txt", "b.txt", "deep/c.txt"]:
        files.upload(key, secrets.token_bytes(500), {"content-type": "text/plain"})
    app_id = storage_app.app.app_id
    versions = storage_app.sql(f"select version from storage.objects where app_id = '{app_id}' and bucket_id = '{name}'").split()
    assert len(versions) == 3
    keys = ", ".join(f"'{app_id}/{v}'" for v in versions)

    assert admin.empty_bucket(name) == {"message": "Successfully emptied"}
    # The rows go at once: nothing lists, nothing downloads.
    assert storage_app.sql(f"select count(*) from storage.objects where app_id = '{app_id}' and bucket_id = '{name}'") == "0"
    assert files.list() == []
    assert raises(lambda: files.download("a.txt"))["statusCode"] == "404"
    # The bytes go soon after (due 30 s later for downloads in flight, aged here; the sweeper runs every 2 s): their
    # sweep rows are done, their files gone.
    storage_app.sql(f"update guestpass.storage_sweep set not_before = now() - interval '1 second' where key in ({keys})")
    deadline = time.monotonic() + 8
    while storage_app.sql(f"select count(*) from guestpass.storage_sweep where key in ({keys})") != "0":
        assert time.monotonic() < deadline, "the emptied bucket's bytes were not swept within 8 s"
        time.sleep(0.1)
    if storage_app.backend["kind"] == "file":
        for version in versions:
            assert not os.path.exists(os.path.join(storage_app.backend["dir"], app_id, version))
    # An emptied bucket can be deleted; emptying a missing one is 404.
    assert admin.delete_bucket(name) == {"message": "Successfully deleted"}
    assert raises(lambda: admin.empty_bucket(name)) == BUCKET_NOT_FOUND


def test_delete_refuses_a_non_empty_bucket_and_a_missing_one(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("del")
    admin.create_bucket(name)
    admin.from_(name).upload("keep.txt", b"keep", {"content-type": "text/plain"})
    refused = raises(lambda: admin.delete_bucket(name))
    assert refused["statusCode"] == "409" and refused["message"] == "The bucket you tried to delete is not empty", refused
    assert admin.from_(name).download("keep.txt") == b"keep"
    assert admin.get_bucket(name).id == name
    admin.empty_bucket(name)
    assert admin.delete_bucket(name) == {"message": "Successfully deleted"}
    assert raises(lambda: admin.get_bucket(name)) == BUCKET_NOT_FOUND
    assert raises(lambda: admin.delete_bucket(name)) == BUCKET_NOT_FOUND
    assert name not in {b.id for b in admin.list_buckets()}
    # Made again under the same name, it is a new, empty bucket.
    admin.create_bucket(name)
    assert admin.from_(name).list() == []
    assert raises(lambda: admin.from_(name).download("keep.txt"))["statusCode"] == "404"


def test_a_guest_makes_no_buckets(storage_app: StorageApp):
    client, user_id, _ = storage_app.guest()
    name = unique("guest")
    assert raises(lambda: client.storage.create_bucket(name)) == {
        "statusCode": "403", "error": "Unauthorized", "message": "new row violates row-level security policy"}
    assert name not in {b.id for b in storage_app.admin().storage.list_buckets()}
    # Bucket rows have no policies for users: a guest sees none, changes none, deletes none ...
    assert client.storage.list_buckets() == []
    assert raises(lambda: client.storage.get_bucket("photos")) == BUCKET_NOT_FOUND
    assert raises(lambda: client.storage.update_bucket("photos", {"public": True})) == BUCKET_NOT_FOUND
    assert raises(lambda: client.storage.delete_bucket("device-notes")) == BUCKET_NOT_FOUND
    assert storage_app.admin().storage.get_bucket("photos").public is False
    # ... yet uploads to the app's bucket under its policies, as on Supabase.
    client.storage.from_("photos").upload(f"{user_id}/still.png", b"ok", {"content-type": "image/png"})


def test_another_app_cannot_see_read_list_sign_or_delete_this_apps_buckets(storage_app: StorageApp):
    mine = storage_app.admin().storage
    other = other_app(storage_app, "tenant-b")
    theirs = other.admin().storage
    name = unique("tenant")
    mine.create_bucket(name)
    mine.from_(name).upload("doc.txt", b"app one's document", {"content-type": "text/plain"})
    mine.from_("photos").upload("backend/one.txt", b"app one's photo", {"content-type": "text/plain"})

    assert name not in {b.id for b in theirs.list_buckets()} and "photos" not in {b.id for b in theirs.list_buckets()}
    assert raises(lambda: theirs.get_bucket(name)) == BUCKET_NOT_FOUND
    assert raises(lambda: theirs.from_(name).download("doc.txt"))["statusCode"] == "404"
    assert raises(lambda: theirs.from_("photos").download("backend/one.txt"))["statusCode"] == "404"
    assert raises(lambda: theirs.from_(name).info("doc.txt"))["statusCode"] == "404"
    assert raises(lambda: theirs.from_(name).list())["statusCode"] == "404"
    assert raises(lambda: theirs.from_(name).create_signed_url("doc.txt", 60))["statusCode"] == "404"
    assert raises(lambda: theirs.from_(name).create_signed_upload_url("planted.txt"))["statusCode"] == "404"
    assert raises(lambda: theirs.from_(name).upload("planted.txt", b"x", {"content-type": "text/plain"}))["statusCode"] == "404"
    assert raises(lambda: theirs.from_(name).move("doc.txt", "moved.txt"))["statusCode"] == "404"
    assert raises(lambda: theirs.update_bucket(name, {"public": True})) == BUCKET_NOT_FOUND
    assert raises(lambda: theirs.empty_bucket(name)) == BUCKET_NOT_FOUND
    assert raises(lambda: theirs.delete_bucket(name)) == BUCKET_NOT_FOUND
    # Their secret key's remove finds nothing of ours.
    try:
        removed = theirs.from_(name).remove(["doc.txt"])
    except StorageApiError as error:
        assert str(error.status) == "404"
    else:
        assert removed == []
    # All of it is still ours, unchanged.
    assert mine.from_(name).download("doc.txt") == b"app one's document"
    assert mine.from_("photos").download("backend/one.txt") == b"app one's photo"
    assert mine.get_bucket(name).public is False
    assert [e["name"] for e in mine.from_(name).list()] == ["doc.txt"]

    # The other app may have its own private bucket of that name, with its own objects.
    assert theirs.create_bucket(name) == {"name": name}
    theirs.from_(name).upload("doc.txt", b"app two's document", {"content-type": "text/plain"})
    assert theirs.from_(name).download("doc.txt") == b"app two's document"
    assert mine.from_(name).download("doc.txt") == b"app one's document"
    # A signed URL is bound to the app that signed it: ours serves our bytes, theirs theirs.
    with httpx.Client(timeout=20) as http:
        signed_mine = mine.from_(name).create_signed_url("doc.txt", 60)["signedURL"]
        signed_theirs = theirs.from_(name).create_signed_url("doc.txt", 60)["signedURL"]
        assert http.get(signed_mine).content == b"app one's document"
        assert http.get(signed_theirs).content == b"app two's document"
    theirs.empty_bucket(name)
    theirs.delete_bucket(name)
    assert mine.get_bucket(name).id == name


def test_a_public_bucket_name_is_one_across_apps(storage_app: StorageApp):
    mine = storage_app.admin().storage
    theirs = other_app(storage_app, "tenant-pub").admin().storage
    name = unique("pub-one")
    mine.create_bucket(name, options={"public": True})
    assert raises(lambda: theirs.create_bucket(name, options={"public": True}))["statusCode"] == "409"
    # Private under that name is theirs to have, but not to make public.
    assert theirs.create_bucket(name) == {"name": name}
    assert raises(lambda: theirs.update_bucket(name, {"public": True}))["statusCode"] == "409"
    assert theirs.get_bucket(name).public is False
    # Once ours is private, theirs may be public.
    mine.update_bucket(name, {"public": False})
    theirs.update_bucket(name, {"public": True})
    assert theirs.get_bucket(name).public is True
    assert raises(lambda: mine.update_bucket(name, {"public": True}))["statusCode"] == "409"


def test_a_public_bucket_serves_with_no_headers_until_it_is_private_again(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("pub")
    admin.create_bucket(name, options={"public": True})
    data = secrets.token_bytes(700)
    admin.from_(name).upload("dir/hello.bin", data, {"content-type": "application/octet-stream", "cache-control": "120"})
    url = f"{storage_app.server.url}/storage/v1/object/public/{name}/dir/hello.bin"
    with httpx.Client(timeout=20) as http:
        plain = http.get(url)  # no apikey, no Authorization, nothing
        assert plain.status_code == 200 and plain.content == data
        assert plain.headers["cache-control"] == "max-age=120"
        public_url = admin.from_(name).get_public_url("dir/hello.bin")
        assert public_url.startswith(f"{storage_app.server.url}/storage/v1/object/public/{name}/dir/hello.bin")
        assert http.get(public_url).content == data
        head = http.head(url)
        assert head.status_code == 200 and head.headers["content-length"] == "700"
        # Unknown query parameters are ignored.
        assert http.get(url + "?cacheNonce=123&token=nonsense").content == data
        # A private bucket's objects are not served there.
        admin.from_("photos").upload("backend/private.bin", b"private", {"content-type": "application/octet-stream"})
        hidden = http.get(f"{storage_app.server.url}/storage/v1/object/public/photos/backend/private.bin")
        assert hidden.status_code == 400 and hidden.json()["statusCode"] == "404" and hidden.json()["error"] == "Bucket not found"
        missing = http.get(f"{storage_app.server.url}/storage/v1/object/public/{name}/dir/none.bin")
        assert missing.status_code == 400 and missing.json()["statusCode"] == "404"

        admin.update_bucket(name, {"public": False})
        gone = http.get(public_url)
        assert gone.status_code == 400, gone.text
        assert gone.json() == {"statusCode": "404", "code": "NoSuchBucket", "error": "Bucket not found", "message": "Bucket not found"}
    # The object itself is still there for the app's backend.
    assert admin.from_(name).download("dir/hello.bin") == data


def test_a_buckets_size_limit_holds_on_upload(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("small")
    admin.create_bucket(name, options={"file_size_limit": "1kb"})
    files = admin.from_(name)
    refused = raises(lambda: files.upload("big.bin", secrets.token_bytes(2048), {"content-type": "application/octet-stream"}))
    assert refused == {"statusCode": "413", "error": "Payload too large", "message": "The object exceeded the maximum allowed size"}
    assert raises(lambda: files.download("big.bin"))["statusCode"] == "404"
    small = secrets.token_bytes(900)
    files.upload("small.bin", small, {"content-type": "application/octet-stream"})
    assert files.download("small.bin") == small
    # A raw body over the limit: the same answer, before any byte is stored.
    with httpx.Client(timeout=20) as http:
        raw = http.post(f"{storage_app.server.url}/storage/v1/object/{name}/raw.bin",
                        headers=storage_headers(storage_app.app.secret_key, **{"Content-Type": "application/octet-stream"}),
                        content=secrets.token_bytes(2048))
        assert raw.status_code == 400 and raw.json()["statusCode"] == "413" and raw.json()["code"] == "EntityTooLarge", raw.text
    # Raising the limit lets the same upload through.
    admin.update_bucket(name, {"file_size_limit": 4096})
    files.upload("big.bin", secrets.token_bytes(2048), {"content-type": "application/octet-stream"})


def test_a_buckets_mime_types_hold_on_upload(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("png-only")
    admin.create_bucket(name, options={"allowed_mime_types": ["image/png"]})
    files = admin.from_(name)
    refused = raises(lambda: files.upload("note.txt", b"text", {"content-type": "text/plain"}))
    assert refused["statusCode"] == "415" and refused["error"] == "invalid_mime_type", refused
    assert raises(lambda: files.upload("photo.jpg", b"jpeg", {"content-type": "image/jpeg"}))["statusCode"] == "415"
    files.upload("photo.png", b"png", {"content-type": "image/png"})
    assert files.info("photo.png")["content_type"] == "image/png"
    assert [e["name"] for e in files.list()] == ["photo.png"]

    admin.update_bucket(name, {"allowed_mime_types": ["image/*"]})
    files.upload("photo.jpg", b"jpeg", {"content-type": "image/jpeg"})
    assert files.download("photo.jpg") == b"jpeg"
    assert raises(lambda: files.upload("note.txt", b"text", {"content-type": "text/plain"}))["statusCode"] == "415"
    # A signed upload is held to the same types.
    token = files.create_signed_upload_url("signed.txt")["token"]
    assert raises(lambda: files.upload_to_signed_url("signed.txt", token, b"text", {"content-type": "text/plain"}))["statusCode"] == "415"


def test_a_refused_mime_type_is_named_in_supabases_words(storage_app: StorageApp):
    admin = storage_app.admin().storage
    name = unique("png-words")
    admin.create_bucket(name, options={"allowed_mime_types": ["image/png"]})
    with httpx.Client(timeout=20) as http:
        refused = http.post(f"{storage_app.server.url}/storage/v1/object/{name}/note.txt",
                            headers=storage_headers(storage_app.app.secret_key, **{"Content-Type": "text/plain"}), content=b"text")
    assert refused.status_code == 400
    assert refused.json() == {"statusCode": "415", "code": "InvalidMimeType", "error": "invalid_mime_type",
                              "message": "mime type text/plain is not supported"}


def test_emptying_a_bucket_gives_its_users_their_quota_back(storage_app: StorageApp):
    app = other_app(storage_app, "empty-quota")
    configure_app(app.database, app.app, storage_user_bytes_limit=3000)
    app.admin().storage.create_bucket("photos")
    client, user_id, _ = app.guest()
    photos = client.storage.from_("photos")
    photos.upload(f"{user_id}/one.bin", secrets.token_bytes(2000), {"content-type": "application/octet-stream"})
    full = raises(lambda: photos.upload(f"{user_id}/two.bin", secrets.token_bytes(2000), {"content-type": "application/octet-stream"}))
    assert full["statusCode"] == "413", full
    assert app.sql(f"select bytes, objects from guestpass.storage_usage where user_id = '{user_id}'") == "2000|1"
    app.admin().storage.empty_bucket("photos")
    assert app.sql(f"select bytes, objects from guestpass.storage_usage where user_id = '{user_id}'") == "0|0"
    photos.upload(f"{user_id}/two.bin", secrets.token_bytes(2000), {"content-type": "application/octet-stream"})
    assert [e["name"] for e in photos.list(user_id)] == ["two.bin"]
