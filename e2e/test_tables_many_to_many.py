"""Many-to-many embedding through a junction table (`sql/examples`: `tags`, `reading_tags`), as PostgREST finds and
answers it: a table with a foreign key to each side, both inside its primary key. Readings embed their tags and tags
their readings (arrays), with embedded filters, order, `!inner`, null filters, spreads and the junction's name as a
hint; every side is read under the caller's row-level security, so nobody embeds or links another user's rows. The
example's computed field `tag_count(readings)` is selected, filtered and ordered like a column.
"""

from __future__ import annotations

import pytest

from test_tables import Guest, assert_table_error, ids


@pytest.fixture()
def tagged(server, app):
    """A guest with readings A (palm; tags love, work), B (face; work) and C (coffee; none)."""
    guest = Guest(server, app)
    a, b, c = guest.table("readings").insert([
        {"kind": "palm", "created_at": "2026-03-01T00:00:00+00:00"},
        {"kind": "face", "created_at": "2026-03-02T00:00:00+00:00"},
        {"kind": "coffee", "created_at": "2026-03-03T00:00:00+00:00"},
    ]).execute().data
    love, work = guest.table("tags").insert([{"name": "love"}, {"name": "work"}]).execute().data
    links = guest.table("reading_tags").insert([
        {"reading_id": a["id"], "tag_id": love["id"]}, {"reading_id": a["id"], "tag_id": work["id"]},
        {"reading_id": b["id"], "tag_id": work["id"]},
    ]).execute().data
    assert all(link["user_id"] == guest.user_id for link in links), "owner columns come from the claims"
    guest.readings, guest.tags = (a, b, c), (love, work)
    return guest


def test_readings_embed_their_tags_and_tags_their_readings(tagged):
    rows = tagged.table("readings").select("kind, tags(name)").order("created_at").order("name", foreign_table="tags")
    assert rows.execute().data == [
        {"kind": "palm", "tags": [{"name": "love"}, {"name": "work"}]},
        {"kind": "face", "tags": [{"name": "work"}]},
        {"kind": "coffee", "tags": []},
    ]
    back = tagged.request("GET", "tags?select=name,readings(kind)&order=name&readings.order=created_at")
    assert back.status_code == 200, back.text
    assert back.json() == [{"name": "love", "readings": [{"kind": "palm"}]},
                           {"name": "work", "readings": [{"kind": "palm"}, {"kind": "face"}]}]
    hinted = tagged.request("GET", "readings?select=kind,tags!reading_tags(name)&order=created_at&limit=1&tags.order=name")
    assert hinted.json() == [{"kind": "palm", "tags": [{"name": "love"}, {"name": "work"}]}], hinted.text
    assert_table_error(tagged.request("GET", "readings?select=kind,tags!nope(name)"), 400, "PGRST200")
    # The junction itself embeds as the one-to-many it also is.
    links = tagged.request("GET", "readings?select=kind,reading_tags(tags(name))&order=created_at&limit=1")
    assert sorted(link["tags"]["name"] for link in links.json()[0]["reading_tags"]) == ["love", "work"], links.text


def test_filters_inner_null_filters_and_spreads_through_the_junction(tagged):
    a, b, c = (r["id"] for r in tagged.readings)
    loved = tagged.table("readings").select("id, tags!inner(name)").eq("tags.name", "love").execute().data
    assert loved == [{"id": a, "tags": [{"name": "love"}]}]
    untagged = tagged.request("GET", "readings?select=id,tags()&tags=is.null")
    assert untagged.json() == [{"id": c}], untagged.text
    worked = tagged.request("GET", "readings?select=id,tags()&tags.name=eq.work&tags=not.is.null&order=created_at")
    assert ids(worked.json()) == [a, b], worked.text
    spread = tagged.request("GET", "readings?select=kind,...tags(tag:name)&tags.order=name.desc&order=created_at")
    assert spread.json() == [{"kind": "palm", "tag": ["work", "love"]}, {"kind": "face", "tag": ["work"]},
                             {"kind": "coffee", "tag": []}], spread.text
    limited = tagged.request("GET", "tags?select=name,readings(kind)&readings.order=created_at.desc&readings.limit=1"
                                    "&name=eq.work")
    assert limited.json() == [{"name": "work", "readings": [{"kind": "face"}]}], limited.text


def test_nobody_embeds_or_links_another_users_rows(tagged, server, app):
    other = Guest(server, app)
    mine = other.table("readings").insert({"kind": "face"}).execute().data[0]
    my_tag = other.table("tags").insert({"name": "love"}).execute().data[0]
    assert other.request("GET", "readings?select=kind,tags(name)").json() == [{"kind": "face", "tags": []}]
    assert other.request("GET", "tags?select=name,readings(kind)").json() == [{"name": "love", "readings": []}]
    love = tagged.tags[0]
    for link in ({"reading_id": mine["id"], "tag_id": love["id"]},                   # someone else's tag
                 {"reading_id": tagged.readings[2]["id"], "tag_id": my_tag["id"]},   # someone else's reading
                 {"reading_id": mine["id"], "tag_id": my_tag["id"], "user_id": tagged.user_id}):  # as someone else
        assert_table_error(other.request("POST", "reading_tags", json=link), 403, "42501")
    # The owner still sees exactly its own links, and the other guest's own link works.
    assert other.request("POST", "reading_tags", json={"reading_id": mine["id"], "tag_id": my_tag["id"]}).status_code == 201
    assert len(tagged.table("reading_tags").select("*").execute().data) == 3
    assert other.request("GET", "readings?select=tags(name)").json() == [{"tags": [{"name": "love"}]}]


def test_a_computed_field_is_selected_filtered_and_ordered_like_a_column(tagged):
    rows = tagged.table("readings").select("kind, tag_count").order("tag_count", desc=True).order("kind").execute().data
    assert rows == [{"kind": "palm", "tag_count": 2}, {"kind": "face", "tag_count": 1}, {"kind": "coffee", "tag_count": 0}]
    assert "tag_count" not in tagged.table("readings").select("*").limit(1).execute().data[0], "* holds columns only"
    tagged_twice = tagged.table("readings").select("kind").gte("tag_count", 2).execute().data
    assert tagged_twice == [{"kind": "palm"}]
    renamed = tagged.request("GET", "reading_tags?select=r:readings(kind,n:tag_count::text)&limit=1&order=r(kind).desc")
    assert renamed.status_code == 200 and renamed.json() == [{"r": {"kind": "palm", "n": "2"}}], renamed.text
    written = tagged.request("POST", "readings?select=kind,tag_count", {"Prefer": "return=representation"},
                             json={"kind": "face"})
    assert written.status_code == 201 and written.json() == [{"kind": "face", "tag_count": 0}], written.text
