-- DeviceCheck: the welcome grant's claims, leases and settings
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
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
--
-- serialise the welcome grant per app where Apple's bit0 was seen unset, and repair a pending claim only with proof
-- Two guests on one phone (two installs, or two device secrets) claiming at the same moment each asked Apple, each saw
-- bit0 unset and each was granted: Apple has no compare-and-set, and the only lock was each user's own row. Now the
-- step "ask Apple again, set bit0, grant" runs under a lease per app (guestpass.devicecheck_leases): one claim of the
-- app at a time, across every server replica. The server first asks Apple without the lease (a device whose bit0 is
-- already set is refused at once, the common case of a reinstall); only a claim that saw bit0 unset takes the lease,
-- asks Apple again under it, and sets the bit. Apple's two bits are per device and developer team: apps of one team
-- that each run their own welcome grant are serialised per app only.
--
-- Proof for repairs. A claim records when it first took the lease (lease_taken_at): from then on it may have written
-- bit0. A claim left pending (Apple's update failed and a second query could not tell whether it landed, or the
-- server crashed after it) is repaired later: if bit0 is unset, its update never landed and it proceeds as new; if
-- bit0 is set, it is granted only when no other claim of the app took the lease after it and then wrote bit0 or may
-- have (granted because bit0 was unset, or still pending) - every writer holds the lease, so bit0 can then only be its
-- own. Otherwise it is refused (reason repair_unproven): it may have been another install's grant. Claims from before
-- this migration count from when they were created.
--
-- The lease has a time to live (the server passes it: longer than its Apple calls under the lease), so a crashed
-- server delays the app's new-device grants by at most that long. Finishing a claim releases the lease in the same
-- transaction as the grant.

create or replace function guestpass_server.app_devicecheck_settings()
    returns table (
        team_id text,
        key_id text,
        key_path text,
        environment text,
        base_url text,
        welcome_grant_credits integer
    )
    language sql stable security definer set search_path = '' as $$
    select a.devicecheck_team_id, a.devicecheck_key_id, a.devicecheck_key_path, a.devicecheck_environment,
           a.devicecheck_base_url, a.welcome_grant_credits
    from guestpass.apps as a
    where a.id = auth.app_id()
$$;

comment on function guestpass_server.app_devicecheck_settings() is
    'GuestPass server: the DeviceCheck settings of the caller''s app (claim app_id): team id, key id, .p8 key path, '
    'environment, base URL override and the welcome grant in credits; no row without a known app. Columns are null '
    'when not configured.';

create or replace function guestpass_server.devicecheck_begin(p_token_hash text)
    returns table (status text, claim_id uuid, pending_claim_id uuid)
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
    v_claimed boolean;
    v_pending guestpass.devicecheck_claims%rowtype;
    v_claim uuid;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform guestpass.require_hex_sha256(p_token_hash, 'the token hash');

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

create or replace function guestpass_server.devicecheck_take_lease(p_claim_id uuid, p_ttl_seconds double precision)
    returns boolean
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if p_ttl_seconds is null or not (p_ttl_seconds > 0 and p_ttl_seconds <= 300) then
        raise exception 'the lease time to live must be in (0, 300] seconds' using errcode = '22023';
    end if;
    if not exists (
        select 1 from guestpass.devicecheck_claims as c
        where c.id = p_claim_id and c.user_id = v_user and c.app_id = v_app and c.state = 'pending'
    ) then
        raise exception 'no such pending claim of the caller' using errcode = '42501';
    end if;

    insert into guestpass.devicecheck_leases as l (app_id, claim_id, expires_at)
    values (v_app, p_claim_id, v_now + p_ttl_seconds * interval '1 second')
    on conflict (app_id) do update
        set claim_id = excluded.claim_id, expires_at = excluded.expires_at
        where l.expires_at <= v_now or l.claim_id = excluded.claim_id;
    if not found then
        return false;
    end if;

    update guestpass.devicecheck_claims as c
    set lease_taken_at = coalesce(c.lease_taken_at, v_now), updated_at = v_now
    where c.id = p_claim_id;
    return true;
end
$$;

comment on function guestpass_server.devicecheck_take_lease(uuid, double precision) is
    'GuestPass server: takes the caller''s app''s DeviceCheck lease for pending claim p_claim_id of the caller for '
    'p_ttl_seconds (0 < ttl <= 300, else 22023) and returns true, or returns false while another claim holds an '
    'unexpired lease (the server waits and retries, up to a bound). Taking it records lease_taken_at (first time '
    'only) and refreshes the claim''s updated_at. Raises 42501 for a claim that is not a pending claim of the caller.';

create or replace function guestpass_server.devicecheck_finish(p_claim_id uuid, p_outcome text)
    returns table (granted boolean, credits_granted integer, credits_balance integer)
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
    v_claimed boolean;
    v_balance integer;
    v_credits integer;
    v_claim guestpass.devicecheck_claims%rowtype;
    v_state text;
    v_reason text;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if p_outcome is null or p_outcome not in ('granted', 'refused', 'failed', 'found_set_on_repair', 'pending') then
        raise exception 'the outcome must be granted, refused, failed, found_set_on_repair or pending'
            using errcode = '22023';
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

    -- Whatever the outcome, this claim is done with Apple for now.
    delete from guestpass.devicecheck_leases as l where l.app_id = v_app and l.claim_id = v_claim.id;

    if v_claim.state = 'pending' then
        if p_outcome = 'pending' then
            return query select false, 0, v_balance;
            return;
        end if;
        if p_outcome = 'found_set_on_repair' then
            -- Ours only if no other claim of the app took the lease after ours and wrote bit0, or may have.
            if v_claim.lease_taken_at is not null and not exists (
                select 1
                from guestpass.devicecheck_claims as o
                where o.app_id = v_app and o.id <> v_claim.id and o.lease_taken_at > v_claim.lease_taken_at
                  and (o.state = 'pending' or (o.state = 'granted' and o.reason in ('bit0_unset', 'repaired')))
            ) then
                v_state := 'granted';
                v_reason := 'repaired';
            else
                v_state := 'refused';
                v_reason := 'repair_unproven';
            end if;
        elsif p_outcome = 'granted' then
            v_state := 'granted';
            v_reason := 'bit0_unset';
        elsif p_outcome = 'refused' then
            v_state := 'refused';
            v_reason := 'bit0_already_set';
        else
            v_state := 'failed';
            v_reason := 'apple_unreachable';
        end if;

        if v_state = 'granted' and v_claimed then
            -- (cannot happen through begin, which answers already_claimed first; it gives nothing)
            v_state := 'refused';
            v_reason := 'already_claimed';
        end if;

        update guestpass.devicecheck_claims as c
        set state = v_state, reason = v_reason, updated_at = v_now
        where c.id = v_claim.id;
        if v_state = 'granted' then
            select a.welcome_grant_credits into strict v_credits from guestpass.apps as a where a.id = v_app;
            update public.users as u set initial_grant_claimed = true where u.id = v_user;
            if v_credits > 0 then
                v_balance := guestpass.apply_credit_change(
                    v_user, v_credits, 'welcome_grant', 'welcome:' || v_claim.id::text
                );
            end if;
            return query select true, v_credits, v_balance;
            return;
        end if;
        if v_state = 'refused' then
            update public.users as u set initial_grant_claimed = true where u.id = v_user and not v_claimed;
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
    'GuestPass server: ends (or parks) a claim of the caller (claims sub and app_id; else 42501) after Apple answered, '
    'and releases the app''s lease if the claim holds it. p_outcome: granted (bit0 was unset and this claim set it) '
    'gives, in one transaction, the app''s welcome_grant_credits (ledger reason welcome_grant, idempotency key '
    'welcome:<claim id>), initial_grant_claimed = true and state granted (reason bit0_unset); refused (bit0 already '
    'set by another install) sets initial_grant_claimed = true and state refused, no credits; found_set_on_repair (a '
    'pending claim''s repair found bit0 set) grants (reason repaired) only if no other claim of the app took the lease '
    'after this one and then wrote bit0 or may have (granted with bit0_unset or repaired, or pending), else refuses '
    '(reason repair_unproven); failed (Apple unreachable, and bit0 certainly not written by this claim) sets state '
    'failed so the next begin starts a new claim; pending leaves the claim pending for a later repair (its update''s '
    'fate is unknown) and only releases the lease. Idempotent: on a finished claim the first outcome stands and nothing '
    'changes. Returns granted, credits_granted (by this claim) and the balance. Raises 22023 on another outcome.';

-- Row-level security, on and forced for the tables of this area (0007_devicecheck.sql): a role, the tables' owner
-- included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.devicecheck_claims enable row level security, force row level security;
alter table guestpass.devicecheck_tokens enable row level security, force row level security;
alter table guestpass.devicecheck_leases enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass_server.app_devicecheck_settings(), guestpass_server.devicecheck_begin(text),
    guestpass_server.devicecheck_take_lease(uuid, double precision), guestpass_server.devicecheck_finish(uuid, text)
    from public;
grant execute on function guestpass_server.app_devicecheck_settings(), guestpass_server.devicecheck_begin(text),
    guestpass_server.devicecheck_take_lease(uuid, double precision), guestpass_server.devicecheck_finish(uuid, text)
    to authenticated;
