-- DeviceCheck: the welcome grant's claims, the tokens sent to Apple, and the one lease per app that may write bit0
-- Versioned: applied once, never edited after a release. The claim protocol lives in repeatable/08_devicecheck.sql.

create table guestpass.devicecheck_claims (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    token_hash text not null,
    state text not null default 'pending',
    reason text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    lease_taken_at timestamptz,
    constraint devicecheck_claims_pkey primary key (id),
    constraint devicecheck_claims_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint devicecheck_claims_token_hash_key unique (token_hash),
    constraint devicecheck_claims_token_hash_check check (octet_length(token_hash) = 64 and token_hash !~ '[^0-9a-f]'),
    constraint devicecheck_claims_state_check check (state in ('pending', 'granted', 'refused', 'failed'))
);

comment on table guestpass.devicecheck_claims is
    'GuestPass: welcome-grant claims through DeviceCheck. token_hash is the lowercase hex SHA-256 of the token that '
    'started the claim. state: pending (Apple is being asked, or a crash left it), granted (bit0 was unset and we '
    'set it: the welcome credits were given), refused (bit0 was already set: nothing given), failed (Apple could not '
    'be reached before anything was set: nothing given, a retry starts a new claim). reason says why it ended. '
    'updated_at is when the claim was started or last taken over by a repair.';

-- At most one pending claim per user: the serialisation point of concurrent claims.
create unique index devicecheck_claims_one_pending_key
    on guestpass.devicecheck_claims (user_id) where state = 'pending';

create index devicecheck_claims_user_id_idx on guestpass.devicecheck_claims (user_id);

comment on column guestpass.devicecheck_claims.lease_taken_at is
    'GuestPass: when this claim first held its app''s DeviceCheck lease, i.e. from when it may have written Apple''s '
    'bit0; null if it never did (it was answered from a first query that found bit0 set, or Apple was unreachable).';

create index devicecheck_claims_app_lease_idx
    on guestpass.devicecheck_claims (app_id, lease_taken_at) where lease_taken_at is not null;

create table guestpass.devicecheck_tokens (
    token_hash text not null,
    app_id uuid not null,
    user_id uuid,
    claim_id uuid,
    seen_at timestamptz not null default now(),
    constraint devicecheck_tokens_pkey primary key (token_hash),
    constraint devicecheck_tokens_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    constraint devicecheck_tokens_user_id_fkey foreign key (user_id) references public.users (id) on delete set null,
    constraint devicecheck_tokens_claim_id_fkey foreign key (claim_id)
        references guestpass.devicecheck_claims (id) on delete set null,
    constraint devicecheck_tokens_token_hash_check check (octet_length(token_hash) = 64 and token_hash !~ '[^0-9a-f]')
);

comment on table guestpass.devicecheck_tokens is
    'GuestPass: every DeviceCheck token sent to Apple (lowercase hex SHA-256; audit and replay refusal), with the '
    'user and the claim it served (a started or a repaired claim). Rows outlive their claim and user.';

create index devicecheck_tokens_user_id_idx on guestpass.devicecheck_tokens (user_id);

create index devicecheck_tokens_claim_id_idx on guestpass.devicecheck_tokens (claim_id);

create table guestpass.devicecheck_leases (
    app_id uuid not null,
    claim_id uuid not null,
    expires_at timestamptz not null,
    constraint devicecheck_leases_pkey primary key (app_id),
    constraint devicecheck_leases_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade
);

comment on table guestpass.devicecheck_leases is
    'GuestPass: the one claim per app that may ask Apple and set bit0 right now (until expires_at). Taken by '
    'guestpass_server.devicecheck_take_lease, released by devicecheck_finish; an expired lease is free.';

