-- create the bookkeeping of the DeviceCheck welcome grant: claims, the seen-token registry, and begin/finish
-- The server calls Apple between two transactions: devicecheck_begin (a pending claim, under the user's row lock),
-- then Apple (query bit0; if unset, set it), then devicecheck_finish with the outcome, which grants the credits, sets
-- users.initial_grant_claimed and closes the claim in one transaction. A crash between Apple's update and the commit
-- leaves the claim pending; a later begin with a new token after 30 s answers 'repair' with that claim, the server
-- asks Apple again and finishes it. At most one claim per user is pending (partial unique index), so concurrent
-- calls of one user run Apple's query/update once; the others get 'in_progress'.
--
-- Tokens. Every token the server sends to Apple is recorded in guestpass.devicecheck_tokens (lowercase hex SHA-256
-- of the token, primary key), whatever happens to its claim, and a token seen before is refused ('token_reused').
-- The registry survives the claim (claim_id set null) and the user (user_id set null); it goes with its app only.
--
-- The functions live in guestpass_server (granted to authenticated; never exposed over RPC) and act only for the
-- user of the verified claims (sub and app_id). Time is guestpass.clock() (0011), so tests can move it.

create table if not exists guestpass.devicecheck_claims (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    token_hash text not null,
    state text not null default 'pending',
    reason text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint devicecheck_claims_pkey primary key (id),
    constraint devicecheck_claims_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint devicecheck_claims_token_hash_key unique (token_hash),
    constraint devicecheck_claims_token_hash_check check (token_hash ~ '^[0-9a-f]{64}$'),
    constraint devicecheck_claims_state_check check (state in ('pending', 'granted', 'refused', 'failed'))
);

comment on table guestpass.devicecheck_claims is
    'GuestPass: welcome-grant claims through DeviceCheck. token_hash is the lowercase hex SHA-256 of the token that '
    'started the claim. state: pending (Apple is being asked, or a crash left it), granted (bit0 was unset and we '
    'set it: the welcome credits were given), refused (bit0 was already set: nothing given), failed (Apple could not '
    'be reached before anything was set: nothing given, a retry starts a new claim). reason says why it ended. '
    'updated_at is when the claim was started or last taken over by a repair.';

-- At most one pending claim per user: the serialisation point of concurrent claims.
create unique index if not exists devicecheck_claims_one_pending_key
    on guestpass.devicecheck_claims (user_id) where state = 'pending';
create index if not exists devicecheck_claims_user_id_idx on guestpass.devicecheck_claims (user_id);

alter table guestpass.devicecheck_claims enable row level security;
alter table guestpass.devicecheck_claims force row level security;

create table if not exists guestpass.devicecheck_tokens (
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
    constraint devicecheck_tokens_token_hash_check check (token_hash ~ '^[0-9a-f]{64}$')
);

comment on table guestpass.devicecheck_tokens is
    'GuestPass: every DeviceCheck token sent to Apple (lowercase hex SHA-256; audit and replay refusal), with the '
    'user and the claim it served (a started or a repaired claim). Rows outlive their claim and user.';

create index if not exists devicecheck_tokens_user_id_idx on guestpass.devicecheck_tokens (user_id);
create index if not exists devicecheck_tokens_claim_id_idx on guestpass.devicecheck_tokens (claim_id);

alter table guestpass.devicecheck_tokens enable row level security;
alter table guestpass.devicecheck_tokens force row level security;

create or replace function guestpass_server.devicecheck_begin(p_token_hash text)
returns table (status text, claim_id uuid, pending_claim_id uuid)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid := auth.uid();
    v_app uuid := auth.app_id();
    v_now timestamptz := guestpass.clock();
    v_claimed boolean;
    v_pending guestpass.devicecheck_claims%rowtype;
    v_claim uuid;
begin
    if v_user is null or v_app is null then
        raise exception 'no user or app in the request claims' using errcode = '42501';
    end if;
    if p_token_hash is null or p_token_hash !~ '^[0-9a-f]{64}$' then
        raise exception 'the token hash must be a lowercase hex SHA-256' using errcode = '22023';
    end if;

    -- The user's lock: begin and finish of one user run one at a time.
    select u.initial_grant_claimed into v_claimed
    from public.users as u
    where u.id = v_user and u.app_id = v_app
    for no key update;
    if not found then
        raise exception 'unknown user' using errcode = '42501';
    end if;

    if v_claimed then
        return query select 'already_claimed'::text, null::uuid, null::uuid;
        return;
    end if;
    if exists (select 1 from guestpass.devicecheck_tokens as t where t.token_hash = p_token_hash) then
        return query select 'token_reused'::text, null::uuid, null::uuid;
        return;
    end if;

    select c.* into v_pending
    from guestpass.devicecheck_claims as c
    where c.user_id = v_user and c.state = 'pending'
    for update;
    if found and v_pending.updated_at > v_now - interval '30 seconds' then
        return query select 'in_progress'::text, null::uuid, v_pending.id;
        return;
    end if;

    -- The token is Apple-bound from here on: record it. Another user's transaction may have recorded the same token
    -- since the check above (a different user row lock); the primary key decides.
    insert into guestpass.devicecheck_tokens (token_hash, app_id, user_id, claim_id, seen_at)
    values (p_token_hash, v_app, v_user, v_pending.id, v_now)
    on conflict (token_hash) do nothing;
    if not found then
        return query select 'token_reused'::text, null::uuid, null::uuid;
        return;
    end if;

    if v_pending.id is not null then
        -- An old pending claim (a crash, or Apple unreachable mid-update): this call takes it over for 30 s.
        update guestpass.devicecheck_claims as c set updated_at = v_now where c.id = v_pending.id;
        return query select 'repair'::text, v_pending.id, v_pending.id;
        return;
    end if;

    insert into guestpass.devicecheck_claims (app_id, user_id, token_hash, state, created_at, updated_at)
    values (v_app, v_user, p_token_hash, 'pending', v_now, v_now)
    returning id into v_claim;
    update guestpass.devicecheck_tokens as t set claim_id = v_claim where t.token_hash = p_token_hash;
    return query select 'started'::text, v_claim, null::uuid;
end
$$;

comment on function guestpass_server.devicecheck_begin(text) is
    'GuestPass server: first step of POST /v1/devicecheck/grant for the caller (claims sub and app_id), before Apple '
    'is called. p_token_hash is the lowercase hex SHA-256 of the DeviceCheck token (else 22023). Locks the user row '
    'and returns one row, status: already_claimed (initial_grant_claimed is set: do not call Apple); token_reused '
    '(this token was seen before: refuse it); in_progress (another call of this user holds a pending claim started '
    'or taken over less than 30 s ago; pending_claim_id = it: try again later); repair (a pending claim older than '
    '30 s was left by a crash or an interrupted update: ask Apple with this token and finish claim_id = '
    'pending_claim_id = that claim; this call takes it over for 30 s); started (a new pending claim claim_id: query '
    'Apple''s bit0, set it if unset, then finish). The token is recorded as seen for repair and started only. '
    'Raises 42501 without a known user and app in the claims.';

create or replace function guestpass_server.devicecheck_finish(p_claim_id uuid, p_outcome text)
returns table (granted boolean, credits_granted integer, credits_balance integer)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid := auth.uid();
    v_app uuid := auth.app_id();
    v_now timestamptz := guestpass.clock();
    v_claimed boolean;
    v_balance integer;
    v_credits integer;
    v_claim guestpass.devicecheck_claims%rowtype;
begin
    if v_user is null or v_app is null then
        raise exception 'no user or app in the request claims' using errcode = '42501';
    end if;
    if p_outcome is null or p_outcome not in ('granted', 'refused', 'failed') then
        raise exception 'the outcome must be granted, refused or failed' using errcode = '22023';
    end if;

    -- Same lock order as devicecheck_begin: the user row, then the claim.
    select u.initial_grant_claimed, u.credits_balance into v_claimed, v_balance
    from public.users as u
    where u.id = v_user and u.app_id = v_app
    for no key update;
    if not found then
        raise exception 'unknown user' using errcode = '42501';
    end if;

    select c.* into v_claim
    from guestpass.devicecheck_claims as c
    where c.id = p_claim_id and c.user_id = v_user and c.app_id = v_app
    for update;
    if not found then
        raise exception 'no such claim of the caller' using errcode = '42501';
    end if;

    if v_claim.state = 'pending' then
        if p_outcome = 'granted' and not v_claimed then
            select a.welcome_grant_credits into strict v_credits from guestpass.apps as a where a.id = v_app;
            update guestpass.devicecheck_claims as c
            set state = 'granted', reason = 'bit0_unset', updated_at = v_now
            where c.id = v_claim.id;
            update public.users as u set initial_grant_claimed = true where u.id = v_user;
            if v_credits > 0 then
                v_balance := guestpass.apply_credit_change(
                    v_user, v_credits, 'welcome_grant', 'welcome:' || v_claim.id::text
                );
            end if;
            return query select true, v_credits, v_balance;
            return;
        elsif p_outcome in ('granted', 'refused') then
            -- refused: bit0 was already set by another install. (granted with initial_grant_claimed already set
            -- cannot happen through begin; it gives nothing.)
            update guestpass.devicecheck_claims as c
            set state = 'refused',
                reason = case when p_outcome = 'refused' then 'bit0_already_set' else 'already_claimed' end,
                updated_at = v_now
            where c.id = v_claim.id;
            update public.users as u set initial_grant_claimed = true where u.id = v_user and not v_claimed;
        else
            update guestpass.devicecheck_claims as c
            set state = 'failed', reason = 'apple_unreachable', updated_at = v_now
            where c.id = v_claim.id;
        end if;
        return query select false, 0, v_balance;
        return;
    end if;

    -- Already finished: the first outcome stands, whatever p_outcome says now.
    if v_claim.state = 'granted' then
        select l.change into v_credits
        from guestpass.credit_ledger as l
        where l.user_id = v_user and l.idempotency_key = 'welcome:' || v_claim.id::text;
        return query select true, coalesce(v_credits, 0), v_balance;
    else
        return query select false, 0, v_balance;
    end if;
end
$$;

comment on function guestpass_server.devicecheck_finish(uuid, text) is
    'GuestPass server: last step of POST /v1/devicecheck/grant, after Apple answered, for a claim of the caller '
    '(claims sub and app_id; else 42501). p_outcome: granted (bit0 was unset and this claim set it, or a repair '
    'found it set by this claim) gives, in one transaction, the app''s welcome_grant_credits (ledger reason '
    'welcome_grant, idempotency key welcome:<claim id>), initial_grant_claimed = true and state granted; refused '
    '(bit0 already set by another install) sets initial_grant_claimed = true and state refused, no credits; failed '
    '(Apple unreachable before anything was set: never after an update that may have reached Apple, leave the claim '
    'pending for a repair instead) sets state failed, so the next begin starts a new claim (the token stays seen). '
    'Idempotent: on a finished claim the first outcome stands and nothing changes. Returns granted, credits_granted '
    '(by this claim) and the balance. Raises 22023 on another outcome.';

revoke execute on function
    guestpass_server.devicecheck_begin(text),
    guestpass_server.devicecheck_finish(uuid, text)
    from public;
grant execute on function
    guestpass_server.devicecheck_begin(text),
    guestpass_server.devicecheck_finish(uuid, text)
    to authenticated;
