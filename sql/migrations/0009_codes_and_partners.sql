-- codes and partners: share codes, pairings, and the transfer and recovery codes that add a device to an account
-- Versioned: applied once, never edited after a release. The design (a share code finds a partner and never signs
-- anyone in; one-time account codes) is written at the head of repeatable/10_codes_and_partners.sql.

create table guestpass.share_codes (
    user_id uuid not null,
    app_id uuid not null,
    code text not null,
    created_at timestamptz not null default now(),
    constraint share_codes_pkey primary key (user_id),
    constraint share_codes_app_code_key unique (app_id, code),
    constraint share_codes_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint share_codes_code_check check (code ~ '^[0-9A-Z]{4,12}$')
);

comment on table guestpass.share_codes is
    'GuestPass: each user''s share code in its app (unique per app), for finding a partner; it never signs anyone in.';

create table public.partners (
    app_id uuid not null,
    user_id uuid not null,
    partner_id uuid not null,
    created_at timestamptz not null default now(),
    constraint partners_pkey primary key (user_id, partner_id),
    constraint partners_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint partners_partner_id_fkey foreign key (partner_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint partners_not_self_check check (user_id <> partner_id)
);

comment on table public.partners is
    'Pairings of two users of an app, one row per direction (written only by pair_with_code and unpair). A user '
    'reads only its own rows; auth.is_partner(uuid) looks them up for policies.';

create index partners_partner_id_idx on public.partners (partner_id);

create table guestpass.account_codes (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    kind text not null,
    code_hash text not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz,
    used_at timestamptz,
    constraint account_codes_pkey primary key (id),
    constraint account_codes_code_hash_key unique (code_hash),
    constraint account_codes_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint account_codes_kind_check check (kind in ('transfer', 'recovery')),
    constraint account_codes_code_hash_check check (octet_length(code_hash) = 64 and code_hash !~ '[^0-9a-f]')
);

comment on table guestpass.account_codes is
    'GuestPass: one-time codes that add a device to an account: transfer (from a signed-in phone, expires) and '
    'recovery (written down, one live per user). Only the SHA-256 of a code is stored; used_at is set when redeemed.';

create index account_codes_user_id_idx on guestpass.account_codes (user_id);

