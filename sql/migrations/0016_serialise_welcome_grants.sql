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

alter table guestpass.devicecheck_claims add column if not exists lease_taken_at timestamptz;

comment on column guestpass.devicecheck_claims.lease_taken_at is
    'GuestPass: when this claim first held its app''s DeviceCheck lease, i.e. from when it may have written Apple''s '
    'bit0; null if it never did (it was answered from a first query that found bit0 set, or Apple was unreachable).';

update guestpass.devicecheck_claims as c
set lease_taken_at = c.created_at
where c.lease_taken_at is null and (c.state = 'pending' or (c.state = 'granted' and c.reason = 'bit0_unset'));

create index if not exists devicecheck_claims_app_lease_idx
    on guestpass.devicecheck_claims (app_id, lease_taken_at) where lease_taken_at is not null;

create table if not exists guestpass.devicecheck_leases (
    app_id uuid not null,
    claim_id uuid not null,
    expires_at timestamptz not null,
    constraint devicecheck_leases_pkey primary key (app_id),
    constraint devicecheck_leases_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade
);

comment on table guestpass.devicecheck_leases is
    'GuestPass: the one claim per app that may ask Apple and set bit0 right now (until expires_at). Taken by '
    'guestpass_server.devicecheck_take_lease, released by devicecheck_finish; an expired lease is free.';

alter table guestpass.devicecheck_leases enable row level security;
alter table guestpass.devicecheck_leases force row level security;

create or replace function guestpass_server.devicecheck_take_lease(p_claim_id uuid, p_ttl_seconds double precision)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid := auth.uid();
    v_app uuid := auth.app_id();
    v_now timestamptz := guestpass.clock();
begin
    if v_user is null or v_app is null then
        raise exception 'no user or app in the request claims' using errcode = '42501';
    end if;
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
    v_state text;
    v_reason text;
begin
    if v_user is null or v_app is null then
        raise exception 'no user or app in the request claims' using errcode = '42501';
    end if;
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

revoke execute on function
    guestpass_server.devicecheck_take_lease(uuid, double precision)
    from public;
grant execute on function
    guestpass_server.devicecheck_take_lease(uuid, double precision)
    to authenticated;
