-- public.tags and public.reading_tags: row-level security, grants and policies per role (per command where they differ), as
-- public.readings (01_readings.sql): authenticated reads and writes only its own tags and links in its own app, and
-- links only its own reading to its own tag; service_role (the app's backend) reads and writes those of its app only,
-- each link between a reading and a tag of the link's user; anon gets nothing. A link is added or removed, never
-- changed (no UPDATE grant).

alter table public.tags enable row level security, force row level security;
alter table public.reading_tags enable row level security, force row level security;

-- Grants: the first wall. Clients may rename a tag; never change an owner column or a link.

grant select, insert, delete on table public.tags to authenticated;
grant update (name) on table public.tags to authenticated;
grant select, insert, update, delete on table public.tags to service_role;
grant select, insert, delete on table public.reading_tags to authenticated, service_role;

-- Policies on tags: the second wall, one per role for every command (the grants narrow the commands). Its owner
-- columns are the whole test, for reading and for writing alike.

drop policy if exists tags_all_own on public.tags;
create policy tags_all_own on public.tags for all to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()))
    with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy tags_all_own on public.tags is
    'A user reads, adds, renames and deletes only its own tags, as itself, in its own app (anything else is 42501).';

drop policy if exists tags_all_app on public.tags;
create policy tags_all_app on public.tags for all to service_role
    using (app_id = (select auth.app_id()))
    with check (app_id = (select auth.app_id()));

comment on policy tags_all_app on public.tags is
    'An app''s backend reads and writes the tags of its app only (and, by the foreign key, only for its users).';

-- Policies on reading_tags. The reading and tag checks read public.readings and public.tags under the caller's own
-- policies, so they can only ever find a row the caller may see.

drop policy if exists reading_tags_select_own on public.reading_tags;
create policy reading_tags_select_own on public.reading_tags for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy reading_tags_select_own on public.reading_tags is 'A user reads only its own links, in its own app.';

drop policy if exists reading_tags_insert_own on public.reading_tags;
create policy reading_tags_insert_own on public.reading_tags for insert to authenticated
    with check (
        user_id = (select auth.uid()) and app_id = (select auth.app_id())
        and exists (select 1 from public.readings as r where r.id = reading_tags.reading_id and r.user_id = (select auth.uid()))
        and exists (select 1 from public.tags as t where t.id = reading_tags.tag_id and t.user_id = (select auth.uid()))
    );

comment on policy reading_tags_insert_own on public.reading_tags is
    'A user links only its own reading to its own tag, as itself, in its own app (anything else is 42501).';

drop policy if exists reading_tags_delete_own on public.reading_tags;
create policy reading_tags_delete_own on public.reading_tags for delete to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy reading_tags_delete_own on public.reading_tags is 'A user removes only its own links, in its own app.';

drop policy if exists reading_tags_select_app on public.reading_tags;
create policy reading_tags_select_app on public.reading_tags for select to service_role
    using (app_id = (select auth.app_id()));

comment on policy reading_tags_select_app on public.reading_tags is 'An app''s backend reads the links of its app only.';

drop policy if exists reading_tags_insert_app on public.reading_tags;
create policy reading_tags_insert_app on public.reading_tags for insert to service_role
    with check (
        app_id = (select auth.app_id())
        and exists (select 1 from public.readings as r where r.id = reading_tags.reading_id and r.user_id = reading_tags.user_id)
        and exists (select 1 from public.tags as t where t.id = reading_tags.tag_id and t.user_id = reading_tags.user_id)
    );

comment on policy reading_tags_insert_app on public.reading_tags is
    'An app''s backend links, in its own app only, a reading and a tag that both belong to the link''s user.';

drop policy if exists reading_tags_delete_app on public.reading_tags;
create policy reading_tags_delete_app on public.reading_tags for delete to service_role
    using (app_id = (select auth.app_id()));

comment on policy reading_tags_delete_app on public.reading_tags is 'An app''s backend removes links of its app only.';

-- A computed field, as PostgREST has them: a function of an exposed schema whose one argument is a reading's row is
-- selected, filtered and ordered like a column of readings (readings?select=kind,tag_count&order=tag_count.desc),
-- though never by `*`. SECURITY INVOKER, so it counts only the links the caller may see.
create or replace function public.tag_count(public.readings)
    returns integer
    language sql stable set search_path = '' as $$
    select count(*)::integer from public.reading_tags as l where l.reading_id = $1.id
$$;

comment on function public.tag_count(public.readings) is
    'Example app (a computed field of readings): how many tags the reading carries, of the links the caller may see.';

revoke all on function public.tag_count(public.readings) from public;
grant execute on function public.tag_count(public.readings) to authenticated, service_role;
