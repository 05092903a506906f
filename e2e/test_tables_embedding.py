"""Embedding through the table API with the official client and raw PostgREST requests (`sql/examples`: readings,
their notes, their users): one-to-many as arrays and many-to-one as objects, aliases, hints, `!inner`, embedded filters,
order and ranges, null filters on an embedding's name, empty embeddings, related orders (`order=rel(col)`), spreads of
to-one and to-many targets, and embedding after a write. Many-to-many lives in `test_tables_many_to_many.py`.
"""

from __future__ import annotations

import pytest

from test_tables import Guest, assert_table_error, ids


def reading_notes_or_skip(guest: Guest) -> None:
    probe = guest.request("GET", "reading_notes?limit=0")
    if probe.status_code == 404 and probe.json().get("code") == "PGRST205":
        pytest.skip("public.reading_notes is not in sql/examples yet")
    assert probe.status_code == 200, probe.text


@pytest.fixture()
def noted(server, app):
    """A guest with reading A (notes "x", "y") and reading B (no notes); skips while reading_notes is missing."""
    guest = Guest(server, app)
    reading_notes_or_skip(guest)
    a, b = guest.table("readings").insert([
        {"kind": "palm", "created_at": "2026-02-01T00:00:00+00:00"},
        {"kind": "face", "created_at": "2026-02-02T00:00:00+00:00"},
    ]).execute().data
    notes = guest.table("reading_notes").insert([{"reading_id": a["id"], "body": "x"},
                                                  {"reading_id": a["id"], "body": "y"}]).execute().data
    assert all(n["user_id"] == guest.user_id and n["app_id"] == app.app_id for n in notes)
    guest.a, guest.b, guest.notes = a, b, notes
    return guest


def test_embed_one_to_many_and_many_to_one(noted):
    rows = noted.table("readings").select("*, reading_notes(*)").order("created_at").execute().data
    assert ids(rows) == [noted.a["id"], noted.b["id"]]
    assert isinstance(rows[0]["reading_notes"], list)
    assert sorted(n["body"] for n in rows[0]["reading_notes"]) == ["x", "y"]
    assert rows[0]["reading_notes"][0]["reading_id"] == noted.a["id"]
    assert rows[1]["reading_notes"] == [], "no notes: an empty array"

    notes = noted.table("reading_notes").select("*, readings(*)").execute().data
    assert len(notes) == 2
    for note in notes:
        assert isinstance(note["readings"], dict) and note["readings"]["id"] == noted.a["id"]
        assert note["readings"]["kind"] == "palm"

    by_constraint = noted.table("reading_notes").select("body, reading:readings!reading_notes_reading_id_fkey(kind)")
    assert {n["reading"]["kind"] for n in by_constraint.execute().data} == {"palm"}


def test_embed_alias_inner_filter_order_and_limit(noted):
    aliased = noted.table("readings").select("kind, notes:reading_notes(body)").order("created_at").execute().data
    assert [set(r) for r in aliased] == [{"kind", "notes"}, {"kind", "notes"}]
    assert sorted(aliased[0]["notes"], key=lambda n: n["body"]) == [{"body": "x"}, {"body": "y"}]
    assert aliased[1]["notes"] == []

    inner = noted.table("readings").select("id, reading_notes!inner(*)").execute().data
    assert ids(inner) == [noted.a["id"]], "!inner drops readings without notes"

    inner_filtered = noted.table("readings").select("id, reading_notes!inner(body)").eq("reading_notes.body", "y")
    assert ids(inner_filtered.execute().data) == [noted.a["id"]]
    none_matching = noted.table("readings").select("id, reading_notes!inner(body)").eq("reading_notes.body", "zzz")
    assert none_matching.execute().data == []

    ordered = noted.table("readings").select("id, reading_notes(body)").eq("id", noted.a["id"])
    ordered = ordered.order("body", desc=True, foreign_table="reading_notes").limit(1, foreign_table="reading_notes")
    assert ordered.execute().data == [{"id": noted.a["id"], "reading_notes": [{"body": "y"}]}]

    raw = noted.request("GET", f"readings?select=id,reading_notes(body)&id=eq.{noted.a['id']}"
                               "&reading_notes.order=body.asc&reading_notes.limit=1&reading_notes.offset=1")
    assert raw.status_code == 200 and raw.json()[0]["reading_notes"] == [{"body": "y"}]

    missing = noted.request("GET", "readings?select=id,nothing_here(*)")
    assert_table_error(missing, 400, "PGRST200")


def test_an_embedded_filter_filters_the_children_only(noted):
    filtered = noted.table("readings").select("id, reading_notes(body)").eq("reading_notes.body", "x")
    filtered = filtered.order("created_at").execute().data
    assert ids(filtered) == [noted.a["id"], noted.b["id"]], "an embedded filter does not filter the parent"
    assert filtered[0]["reading_notes"] == [{"body": "x"}] and filtered[1]["reading_notes"] == []
    to_one = noted.table("reading_notes").select("body, readings(kind)").eq("readings.kind", "face").execute().data
    assert sorted(n["body"] for n in to_one) == ["x", "y"] and all(n["readings"] is None for n in to_one)


def test_an_embedded_filter_on_the_users_embedding(server, app):
    """The same through the readings → users foreign key, which needs no reading_notes."""
    guest = Guest(server, app)
    row = guest.table("readings").insert({"kind": "palm"}).execute().data[0]
    guest.table("users").update({"language": "de"}).eq("id", guest.user_id).execute()
    kept = guest.request("GET", "readings?select=id,users(id,language)&users.language=eq.de")
    assert kept.status_code == 200, kept.text
    assert kept.json() == [{"id": row["id"], "users": {"id": guest.user_id, "language": "de"}}]
    dropped = guest.request("GET", "readings?select=id,users(id)&users.language=eq.fr")
    assert dropped.status_code == 200, dropped.text
    assert dropped.json() == [{"id": row["id"], "users": None}], "a to-one embedding filtered out is null"
    children = guest.request("GET", "users?select=id,readings(kind)&readings.kind=eq.face")
    assert children.status_code == 200, children.text
    assert children.json() == [{"id": guest.user_id, "readings": []}]


def test_an_inner_embedding_with_a_filter_on_users(server, app):
    guest = Guest(server, app)
    row = guest.table("readings").insert({"kind": "face"}).execute().data[0]
    kept = guest.request("GET", "readings?select=id,users!inner(id)&users.onboarding_completed=is.false")
    assert kept.status_code == 200 and kept.json() == [{"id": row["id"], "users": {"id": guest.user_id}}], kept.text
    dropped = guest.request("GET", "readings?select=id,users!inner(id)&users.onboarding_completed=is.true")
    assert dropped.status_code == 200 and dropped.json() == [], dropped.text
    embedded = guest.request("GET", "users?select=id,readings(kind)")
    assert embedded.json() == [{"id": guest.user_id, "readings": [{"kind": "face"}]}]


def test_a_null_filter_on_an_embedding_is_an_anti_join_or_an_inner_join(noted):
    a, b = noted.a["id"], noted.b["id"]
    without = noted.request("GET", "readings?select=id,reading_notes()&reading_notes=is.null", {"Prefer": "count=exact"})
    assert without.status_code == 200, without.text
    assert without.json() == [{"id": b}], "an empty embedding filters without appearing in the answer"
    assert without.headers["Content-Range"] == "0-0/1"
    with_notes = noted.table("readings").select("id, reading_notes()").not_.is_("reading_notes", "null").execute().data
    assert with_notes == [{"id": a}]
    # Inside or=, and with an embedded filter narrowing what counts as a match.
    either = noted.request("GET", "readings?select=id,reading_notes()&reading_notes.body=eq.y"
                                  "&or=(reading_notes.not.is.null,kind.eq.face)&order=created_at")
    assert ids(either.json()) == [a, b], either.text
    only_b = noted.request("GET", "readings?select=id,reading_notes()&reading_notes.body=eq.zzz"
                                  "&or=(reading_notes.not.is.null,kind.eq.face)")
    assert ids(only_b.json()) == [b], only_b.text
    nested = noted.request("GET", "users?select=readings(kind,reading_notes())&readings.reading_notes=not.is.null")
    assert nested.status_code == 200, nested.text
    assert nested.json() == [{"readings": [{"kind": "palm"}]}]


def test_order_by_a_to_one_embeddings_column(noted):
    guest = noted
    c = guest.table("readings").insert({"kind": "coffee", "created_at": "2026-02-03T00:00:00+00:00"}).execute().data[0]
    guest.table("reading_notes").insert({"reading_id": c["id"], "body": "w"}).execute()
    ordered = guest.request("GET", "reading_notes?select=body,readings(kind)&order=readings(kind).desc,body")
    assert ordered.status_code == 200, ordered.text
    assert [(n["readings"]["kind"], n["body"]) for n in ordered.json()] == [("palm", "x"), ("palm", "y"), ("coffee", "w")]
    aliased = guest.request("GET", "reading_notes?select=body,r:readings(created_at)&order=r(created_at).asc,body.desc")
    assert [n["body"] for n in aliased.json()] == ["y", "x", "w"], aliased.text
    # The embedding's filter holds for the order too: a row whose embedding is filtered out orders as null.
    filtered = guest.request("GET", "reading_notes?select=body,readings(kind)&readings.kind=eq.coffee"
                                    "&order=readings(kind).nullslast,body")
    assert [n["body"] for n in filtered.json()] == ["w", "x", "y"], filtered.text
    assert_table_error(guest.request("GET", "readings?select=id,reading_notes(body)&order=reading_notes(body)"), 400,
                       "PGRST118", details="'readings' and 'reading_notes' do not form a many-to-one or one-to-one relationship")
    assert_table_error(guest.request("GET", "reading_notes?select=body&order=readings(kind)"), 400, "PGRST108")


def test_embed_after_a_write(noted):
    raw = noted.request("POST", "reading_notes?select=body,readings(kind)", {"Prefer": "return=representation"},
                        json={"reading_id": noted.b["id"], "body": "z"})
    assert raw.status_code == 201, raw.text
    assert raw.json() == [{"body": "z", "readings": {"kind": "face"}}]


def test_a_spread_lifts_a_to_one_target_into_the_row(noted):
    a = noted.a["id"]
    lifted = noted.table("reading_notes").select("body, ...readings(reading_kind:kind, id)").order("body").execute()
    assert lifted.data == [{"body": "x", "reading_kind": "palm", "id": a}, {"body": "y", "reading_kind": "palm", "id": a}]
    nested = noted.request("GET", "reading_notes?select=body,...readings(kind,...users(language))&order=body")
    assert nested.status_code == 200, nested.text
    assert nested.json() == [{"body": "x", "kind": "palm", "language": None}, {"body": "y", "kind": "palm", "language": None}]
    filtered = noted.request("GET", "reading_notes?select=body,...readings(kind)&readings.kind=eq.face&order=body")
    assert filtered.json() == [{"body": "x", "kind": None}, {"body": "y", "kind": None}], "no match: the lifted values are null"
    inner = noted.request("GET", "reading_notes?select=body,...readings!inner(kind)&readings.kind=eq.face")
    assert inner.status_code == 200 and inner.json() == [], "!inner drops the rows without a match"
    # Two lifted columns of one name are both sent (JSON allows it, as in PostgREST), not an ambiguous reference.
    twice = noted.request("GET", f"reading_notes?select=id,...readings(id)&id=eq.{noted.notes[0]['id']}")
    assert twice.status_code == 200, twice.text
    assert twice.text.count('"id"') == 2 and noted.notes[0]["id"] in twice.text and a in twice.text


def test_a_spread_of_a_to_many_target_gives_one_array_a_column_in_step(noted):
    by_body = {n["body"]: n["id"] for n in noted.notes}
    rows = noted.request("GET", "readings?select=kind,...reading_notes(bodies:body,ids:id)"
                                "&reading_notes.order=body.desc&order=created_at")
    assert rows.status_code == 200, rows.text
    assert rows.json() == [{"kind": "palm", "bodies": ["y", "x"], "ids": [by_body["y"], by_body["x"]]},
                           {"kind": "face", "bodies": [], "ids": []}]
    limited = noted.request("GET", "readings?select=kind,...reading_notes(body)&reading_notes.order=body&reading_notes.limit=1"
                                   "&order=created_at")
    assert limited.json() == [{"kind": "palm", "body": ["x"]}, {"kind": "face", "body": []}]
    inner = noted.request("GET", "readings?select=kind,...reading_notes!inner(body)&reading_notes.body=eq.y")
    assert inner.json() == [{"kind": "palm", "body": ["y"]}]
    embedded = noted.request("GET", "users?select=...readings(kinds:kind,notes:reading_notes(body))&readings.order=created_at"
                                    "&readings.notes.order=body")
    assert embedded.status_code == 200, embedded.text
    assert embedded.json() == [{"kinds": ["palm", "face"], "notes": [[{"body": "x"}, {"body": "y"}], []]}]
    spread_twice = noted.request("GET", "users?select=...readings(kind,...reading_notes(body))&readings.order=created_at"
                                        "&readings.reading_notes.order=body.desc")
    assert spread_twice.status_code == 200, spread_twice.text
    assert spread_twice.json() == [{"kind": ["palm", "face"], "body": [["y", "x"], []]}]
    nothing = noted.request("GET", "readings?select=kind,...reading_notes()&order=created_at")
    assert nothing.status_code == 200 and nothing.json() == [{"kind": "palm"}, {"kind": "face"}], nothing.text


def test_a_spread_after_a_write(noted):
    raw = noted.request("POST", "reading_notes?select=body,...readings(kind)", {"Prefer": "return=representation"},
                        json={"reading_id": noted.b["id"], "body": "z"})
    assert raw.status_code == 201, raw.text
    assert raw.json() == [{"body": "z", "kind": "face"}]


def test_a_computed_relationship_embeds_under_its_functions_name(noted):
    """`public.latest_reading(users)` (`sql/examples`, `SETOF readings ROWS 1`): a to-one computed relationship."""
    latest = noted.request("GET", "users?select=id,latest_reading(kind,created_at)")
    assert latest.status_code == 200, latest.text
    assert latest.json() == [{"id": noted.user_id,
                              "latest_reading": {"kind": "face", "created_at": "2026-02-02T00:00:00+00:00"}}]
    filtered = noted.request("GET", "users?select=latest_reading!inner(kind)&latest_reading.kind=eq.palm")
    assert filtered.status_code == 200 and filtered.json() == [], "its one row is not a palm reading: !inner drops the user"
    spread = noted.request("GET", "users?select=...latest_reading(latest_kind:kind)")
    assert spread.json() == [{"latest_kind": "face"}], spread.text
    ordered = noted.request("GET", "users?select=id,latest_reading(kind)&order=latest_reading(kind).desc")
    assert ordered.status_code == 200 and len(ordered.json()) == 1, ordered.text
