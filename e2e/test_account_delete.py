"""Account deletion (App Store guideline 5.1.1(v)): `POST /v1/account/delete` removes the user and every row that
references it, in core and example tables alike (listed here from the catalog, so a new table is covered without
touching this test), and revokes the user's Apple token at the stand-in's `/auth/revoke` exactly once. Deleted means
gone: the same Apple id signs in as a new user.
"""

from __future__ import annotations

import uuid

from conftest import new_device_secret, psql, run
from support import assert_error, bearer_headers, refresh
from test_apple_sign_in import apple, apple_app, rpc, sign_in  # noqa: F401 (fixtures)

# Every foreign key to public.users(id), in any schema: (schema, table, column).
REFERENCES_SQL = """
select n.nspname || '.' || c.relname || '.' || a.attname
from pg_constraint k
join pg_class c on c.oid = k.conrelid
join pg_namespace n on n.oid = c.relnamespace
cross join lateral unnest(k.conkey, k.confkey) as m (l, r)
join pg_attribute a on a.attrelid = k.conrelid and a.attnum = m.l
join pg_attribute ra on ra.attrelid = k.confrelid and ra.attnum = m.r
where k.contype = 'f' and k.confrelid = 'public.users'::regclass and ra.attname = 'id'
order by 1
"""


def rows_of(database, user_id: str) -> dict[str, int]:
    counts = {}
    for reference in psql(database.super_url, REFERENCES_SQL).split():
        schema, table, column = reference.split(".")
        counts[f"{schema}.{table}"] = counts.get(f"{schema}.{table}", 0) + int(
            psql(database.super_url, f'select count(*) from "{schema}"."{table}" where "{column}" = \'{user_id}\'')
        )
    counts["public.users"] = int(psql(database.super_url, f"select count(*) from public.users where id = '{user_id}'"))
    return counts


def test_deleting_an_account_removes_every_row_and_revokes_apple_once(http, server, database, apple, apple_app):  # noqa: F811
    sub = f"delete-{uuid.uuid4()}"
    signed_in = sign_in(http, server, apple_app, apple.id_token(sub), code=apple.authorization_code(sub))
    assert signed_in.status_code == 200, signed_in.text
    session = signed_in.json()
    user_id = session["user"]["id"]
    sealed = psql(database.super_url, f"select octet_length(apple_refresh_token) from guestpass.identities where subject = '{sub}'")
    assert int(sealed) > 28, "Apple's refresh token is kept (sealed) from the authorization code"

    # Rows everywhere: readings (example), credits (ledger), usage, roles, sessions, identities.
    for kind in ("face", "palm"):
        assert rpc(http, server, apple_app, session["access_token"], "add_reading", {"p_kind": kind}).status_code == 200
    run([database.bin, "apps", "grant-credits", "--user", user_id, "--amount", "2"], env={"DATABASE_URL": database.super_url})
    assert rpc(http, server, apple_app, session["access_token"], "complete_account_setup", {"p_full_name": "Del Ete"}).status_code == 200
    before = rows_of(database, user_id)
    assert before["public.readings"] == 2 and before["guestpass.credit_ledger"] >= 1 and before["guestpass.identities"] == 1
    assert before["guestpass.sessions"] >= 1 and before["guestpass.daily_usage"] == 1

    headers = bearer_headers(apple_app, session["access_token"])
    response = http.post(server.url + "/v1/account/delete", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"deleted": True, "apple_tokens_revoked": 1}

    after = rows_of(database, user_id)
    assert set(after.values()) == {0}, {table: count for table, count in after.items() if count}
    assert apple.revoked().count(sub) == 1
    spent = refresh(http, server, apple_app, session["refresh_token"])
    assert spent.status_code == 400, spent.text
    assert_error(http.get(server.url + "/auth/v1/user", headers=headers), 403, "session_not_found", echoed=False)

    again = sign_in(http, server, apple_app, apple.id_token(sub))
    assert again.status_code == 200 and again.json()["user"]["id"] != user_id
    assert again.json()["user"]["user_metadata"].get("full_name") is None


def device_sign_up(http, server, app, device: str) -> dict:
    from conftest import api_headers

    response = http.post(server.url + "/auth/v1/signup", headers=api_headers(app), json={"data": {"device_id": device}})
    assert response.status_code == 200, response.text
    return response.json()


def test_after_deletion_the_same_device_is_a_new_guest(http, server, apple_app):  # noqa: F811
    device = new_device_secret()
    first = device_sign_up(http, server, apple_app, device)
    headers = bearer_headers(apple_app, first["access_token"])
    response = http.post(server.url + "/v1/account/delete", headers=headers)
    assert response.status_code == 200 and response.json() == {"deleted": True, "apple_tokens_revoked": 0}
    again = device_sign_up(http, server, apple_app, device)
    assert again["user"]["id"] != first["user"]["id"]


def test_a_merged_guests_device_signs_in_to_the_account(http, server, apple, apple_app):  # noqa: F811
    from test_apple_sign_in import merge

    device = new_device_secret()
    guest = device_sign_up(http, server, apple_app, device)
    account = sign_in(http, server, apple_app, apple.id_token(f"device-merge-{uuid.uuid4()}")).json()
    assert merge(http, server, apple_app, account["access_token"], guest["refresh_token"]).status_code == 200
    assert device_sign_up(http, server, apple_app, device)["user"]["id"] == account["user"]["id"]


def test_a_token_whose_session_ended_cannot_delete_the_account(http, server, database, apple_app):  # noqa: F811
    """An access token outlives its session by up to its lifetime: one copied before a logout still verifies, but
    deleting the account needs the session alive. The account stays whole; a live session of it may still delete it,
    once — a retry meets the session that went with the user."""
    device = new_device_secret()
    first = device_sign_up(http, server, apple_app, device)
    user_id = first["user"]["id"]
    stale = bearer_headers(apple_app, first["access_token"])
    assert http.post(server.url + "/auth/v1/logout", headers=stale).status_code == 204

    assert_error(http.post(server.url + "/v1/account/delete", headers=stale), 403, "session_not_found", echoed=False)
    assert psql(database.super_url, f"select count(*) from public.users where id = '{user_id}'") == "1"

    live = device_sign_up(http, server, apple_app, device)
    assert live["user"]["id"] == user_id
    headers = bearer_headers(apple_app, live["access_token"])
    deleted = http.post(server.url + "/v1/account/delete", headers=headers)
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True, deleted.text
    assert_error(http.post(server.url + "/v1/account/delete", headers=headers), 403, "session_not_found", echoed=False)
    assert psql(database.super_url, f"select count(*) from public.users where id = '{user_id}'") == "0"
