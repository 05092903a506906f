-- quotas and credits: the daily usage per quota day, the credit ledger, idempotent consumes
-- Versioned: applied once, never edited after a release. The quota rules (the quota day, consume, the ledger's
-- writer, the balance check) live in repeatable/07_quotas_and_credits.sql.

-- Daily usage.
create table guestpass.daily_usage (
    user_id uuid not null,
    app_id uuid not null,
    day date not null,
    free_used integer not null default 0,
    premium_used integer not null default 0,
    credit_used integer not null default 0,
    resets_at timestamptz not null,
    constraint daily_usage_pkey primary key (user_id, day),
    constraint daily_usage_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint daily_usage_free_used_check check (free_used >= 0),
    constraint daily_usage_premium_used_check check (premium_used >= 0),
    constraint daily_usage_credit_used_check check (credit_used >= 0)
);

comment on column guestpass.daily_usage.resets_at is
    'GuestPass: when this quota day ends: the local midnight after it started, in the timezone in effect then (moved '
    'later only when the user''s timezone moved west and its date has not passed the day yet).';

comment on table guestpass.daily_usage is
    'GuestPass: consumes per user and quota day, by what paid for them: the free allowance, premium, or a credit. day '
    'is the local date the day started on (in the user''s timezone then); resets_at is when it ends. Days only move '
    'forward (see guestpass.quota_day). No row = nothing used yet.';

-- The credit ledger.
create table guestpass.credit_ledger (
    id bigserial not null,
    app_id uuid not null,
    user_id uuid not null,
    change integer not null,
    reason text not null,
    balance_after integer not null,
    idempotency_key text,
    created_at timestamptz not null default now(),
    constraint credit_ledger_pkey primary key (id),
    constraint credit_ledger_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint credit_ledger_user_idempotency_key_key unique (user_id, idempotency_key),
    constraint credit_ledger_change_check check (change <> 0),
    constraint credit_ledger_reason_check check (char_length(reason) between 1 and 200),
    constraint credit_ledger_balance_after_check check (balance_after >= 0),
    constraint credit_ledger_idempotency_key_check check (char_length(idempotency_key) between 1 and 300)
);

comment on table guestpass.credit_ledger is
    'GuestPass: every change of a user''s credits_balance, in order (id): change (non-zero), reason (consume, '
    'welcome_grant, grant, admin, …), balance_after, and an optional idempotency key unique per user (internal '
    'prefixes: consume:, welcome:, grant:). Written only by guestpass.apply_credit_change.';

-- The user's newest row (the balance check) and the user's history.
create index credit_ledger_user_id_id_idx on guestpass.credit_ledger (user_id, id);

-- Idempotent consumes.
create table guestpass.consumptions (
    user_id uuid not null,
    request_id text not null,
    result jsonb not null,
    created_at timestamptz not null default now(),
    constraint consumptions_pkey primary key (user_id, request_id),
    constraint consumptions_user_id_fkey foreign key (user_id) references public.users (id) on delete cascade,
    constraint consumptions_request_id_check check (char_length(request_id) between 1 and 255)
);

comment on table guestpass.consumptions is
    'GuestPass: the answer of every consume made with a request id (p_request_id or the Idempotency-Key header), so '
    'a retry returns the first answer without charging again.';

