-- public.bouquets: row-level security, grants, the partner-only policies and the Flowers functions
-- Functions are SECURITY INVOKER: the grants and policies below decide, as for a direct query.

alter table public.bouquets enable row level security, force row level security;

grant select, insert on table public.bouquets to authenticated;

drop policy if exists bouquets_select_mine on public.bouquets;
create policy bouquets_select_mine on public.bouquets for select to authenticated
    using ((sender_id = (select auth.uid()) or recipient_id = (select auth.uid())) and app_id = (select auth.app_id()));

comment on policy bouquets_select_mine on public.bouquets is 'A user reads the bouquets it sent or received.';

drop policy if exists bouquets_insert_to_partner on public.bouquets;
create policy bouquets_insert_to_partner on public.bouquets for insert to authenticated
    with check (
        sender_id = (select auth.uid()) and app_id = (select auth.app_id())
        and recipient_id in (select p.partner_id from auth.partner_ids() as p (partner_id))
    );

comment on policy bouquets_insert_to_partner on public.bouquets is
    'A user sends bouquets only as itself and only to a partner (anything else is 42501).';

create or replace function public.send_bouquet(p_recipient_id uuid, p_flower text, p_note text default null)
    returns public.bouquets
    language sql volatile set search_path = '' as $$
    insert into public.bouquets (recipient_id, flower, note) values (p_recipient_id, p_flower, p_note) returning *
$$;

comment on function public.send_bouquet(uuid, text, text) is
    'Flowers example: sends a bouquet (rose, tulip, daisy, sunflower or lily; a note of at most 280 characters) to '
    'partner p_recipient_id; 42501 when not a partner.';

create or replace function public.list_bouquets()
    returns setof public.bouquets
    language sql stable set search_path = '' as $$
    select b.* from public.bouquets as b order by b.created_at desc, b.id
$$;

comment on function public.list_bouquets() is 'Flowers example: the bouquets the caller sent or received, newest first.';

create or replace function public.bouquet_streak(p_partner_id uuid)
    returns integer
    language sql stable set search_path = '' as $$
    with days as (
        select distinct (b.created_at at time zone 'UTC')::date as day
        from public.bouquets as b
        where (b.sender_id = p_partner_id or b.recipient_id = p_partner_id)
    ),
    numbered as (
        select d.day, (max(d.day) over () - d.day) - (row_number() over (order by d.day desc) - 1) as gap
        from days as d
    )
    select count(*)::integer from numbered as n where n.gap = 0
$$;

comment on function public.bouquet_streak(uuid) is
    'Flowers example: how many consecutive days (UTC), ending on their latest exchange, the caller and p_partner_id '
    'exchanged at least one bouquet (0 when never).';

revoke all on function public.send_bouquet(uuid, text, text) from public;
revoke all on function public.list_bouquets() from public;
revoke all on function public.bouquet_streak(uuid) from public;
grant execute on function public.send_bouquet(uuid, text, text) to authenticated;
grant execute on function public.list_bouquets() to authenticated;
grant execute on function public.bouquet_streak(uuid) to authenticated;
