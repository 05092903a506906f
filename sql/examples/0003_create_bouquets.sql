-- create public.bouquets, the Flowers example: partners (paired by share code) send each other bouquets, with streaks
-- An example of "my partner's rows": a user sees the bouquets it sent or received, and may send one only as itself
-- and only to a partner (auth.partner_ids(), the caller's own pairings, inlined into the policy). Nobody else sees
-- them. A streak is the number of consecutive days, ending on the pair's latest exchange, on which the pair exchanged
-- at least one bouquet. Its row-level security, grants, policies and functions are in repeatable/03_bouquets.sql.

create table if not exists public.bouquets (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null default auth.app_id(),
    sender_id uuid not null default auth.uid(),
    recipient_id uuid not null,
    flower text not null,
    note text,
    created_at timestamptz not null default now(),
    constraint bouquets_pkey primary key (id),
    constraint bouquets_sender_id_fkey foreign key (sender_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint bouquets_recipient_id_fkey foreign key (recipient_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint bouquets_flower_check check (flower in ('rose', 'tulip', 'daisy', 'sunflower', 'lily')),
    constraint bouquets_note_check check (char_length(note) <= 280)
);

comment on table public.bouquets is
    'Flowers example: a bouquet (flower, note) a user sent to a partner. Sender and recipient see it; nobody else.';

create index if not exists bouquets_sender_id_idx on public.bouquets (sender_id, created_at desc);
create index if not exists bouquets_recipient_id_idx on public.bouquets (recipient_id, created_at desc);
