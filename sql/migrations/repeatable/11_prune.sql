-- prune: stale guests and old bookkeeping rows, in batches
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- prune: stale guests that hold nothing, and the bookkeeping rows that have served their purpose, in short batches
-- Guests pile up (every install is one; most are never seen again), and so do ended sessions, rotated refresh tokens,
-- idempotency records, idle rate-limit rows and spent codes. guestpass.prune_batch removes one batch of one kind and
-- returns how many rows it removed (or, dry, would remove); `guestpass prune` calls it until a kind is done. Each
-- batch is its own short transaction and takes its rows with FOR UPDATE SKIP LOCKED, so two replicas pruning from
-- cron at once share the work instead of waiting on each other, and no lock is held for long.
--
-- A guest is stale when it is anonymous and its last activity (its newest session's creation or refresh, its
-- devices' last_seen_at, its own updated_at, its latest quota day) is older than the app's guest_idle_days (default
-- 90), and it holds nothing worth keeping: no credits, not premium, no Apple identity, no partner, and no row in any
-- table of public or the exposed schemas that references it (guestpass.user_references; its own devices aside).

create or replace function guestpass.prune_batch(
    p_kind text, p_limit integer, p_dry_run boolean, p_schemas text[], p_after uuid default null
)
    returns table (removed integer, more boolean, next_after uuid)
    language plpgsql volatile set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
    v_candidates uuid[];
    v_keep uuid[] := '{}';
    v_ref record;
    v_found uuid[];
    v_count integer;
    v_table regclass;
    v_key text;
    v_spent text;
begin
    if p_limit is null or p_limit not between 1 and 100000 then
        raise exception using errcode = '22023', message = 'the batch size must be 1 to 100000';
    end if;
    case p_kind
    when 'guests' then
        select coalesce(array_agg(c.id order by c.id), '{}') into v_candidates
        from (
            select u.id
            from public.users as u
            join guestpass.apps as a on a.id = u.app_id
            where (p_after is null or u.id > p_after)
              and u.is_anonymous and u.credits_balance = 0 and not u.is_premium
              and greatest(
                      u.updated_at,
                      (select max(coalesce(s.refreshed_at, s.created_at)) from guestpass.sessions as s where s.user_id = u.id),
                      (select max(d.last_seen_at) from public.devices as d where d.user_id = u.id),
                      (select max(q.resets_at) from guestpass.daily_usage as q where q.user_id = u.id)
                  ) < v_now - make_interval(days => a.guest_idle_days)
              and not exists (select 1 from guestpass.identities as i where i.user_id = u.id)
              and not exists (select 1 from public.partners as p where p.user_id = u.id)
            order by u.id
            limit p_limit
            for update of u skip locked
        ) as c;
        -- Rows in app tables keep their guest.
        for v_ref in
            select r.schema_name, r.table_name, r.column_name
            from guestpass.user_references(p_schemas) as r
            where (r.schema_name, r.table_name) not in (('public', 'devices'), ('public', 'partners'))
        loop
            execute format('select coalesce(array_agg(distinct %I), ''{}'') from %I.%I where %I = any ($1)',
                           v_ref.column_name, v_ref.schema_name, v_ref.table_name, v_ref.column_name)
                into v_found using v_candidates;
            v_keep := v_keep || v_found;
        end loop;
        -- The next batch starts after the last candidate: guests kept for their rows are not examined again.
        if p_dry_run then
            v_count := (select count(*) from unnest(v_candidates) as c (id) where c.id <> all (v_keep));
        else
            delete from public.users as u where u.id = any (v_candidates) and u.id <> all (v_keep);
            get diagnostics v_count = row_count;
        end if;
        return query select v_count, cardinality(v_candidates) = p_limit, v_candidates[cardinality(v_candidates)];
        return;
    when 'sessions', 'refresh_tokens', 'idempotency_records', 'rate_limits', 'account_codes', 'email_codes', 'auth_codes',
         'mail_outbox' then
        -- The bookkeeping kinds differ only in their table, the column that names a row, and which rows are spent.
        select k.table_name, k.row_key, k.spent into v_table, v_key, v_spent
        from (values
            -- Sessions ended over a week ago (their refresh tokens go with them).
            ('sessions', 'guestpass.sessions'::regclass, 'id', 'revoked_at < $1 - interval ''7 days'''),
            -- Tokens rotated away over a week ago (the reuse window is seconds; a replay older than that revokes anyway).
            ('refresh_tokens', 'guestpass.refresh_tokens'::regclass, 'id', 'revoked_at < $1 - interval ''7 days'''),
            -- A retried consume comes within minutes; two days is plenty.
            ('idempotency_records', 'guestpass.consumptions'::regclass, 'ctid', 'created_at < $1 - interval ''2 days'''),
            -- Idle a day: every configured bucket refills within that, and a missing row is a full bucket.
            ('rate_limits', 'guestpass.rate_limits'::regclass, 'bucket', 'updated_at < $1 - interval ''1 day'''),
            -- Used or expired codes, a day on.
            ('account_codes', 'guestpass.account_codes'::regclass, 'id',
             'used_at < $1 - interval ''1 day'' or expires_at < $1 - interval ''1 day'''),
            -- Email codes and PKCE codes used or expired a day ago.
            ('email_codes', 'guestpass.email_codes'::regclass, 'id',
             'used_at < $1 - interval ''1 day'' or expires_at < $1 - interval ''1 day'''),
            ('auth_codes', 'guestpass.auth_codes'::regclass, 'code_hash',
             'used_at < $1 - interval ''1 day'' or expires_at < $1 - interval ''1 day'''),
            -- Mail sent or given up a week ago (the per-address interval looks back an hour at most).
            ('mail_outbox', 'guestpass.mail_outbox'::regclass, 'id',
             'sent_at < $1 - interval ''7 days'' or failed_at < $1 - interval ''7 days''')
        ) as k (kind, table_name, row_key, spent)
        where k.kind = p_kind;
        -- One batch of any of them: $1 the clock, $2 the batch size, $3 a dry run.
        execute format(
            'with doomed as (select %2$I from %1$s where %3$s limit $2 for update skip locked), '
            'gone as (delete from %1$s where not $3 and %2$I in (select d.%2$I from doomed as d) returning 1) '
            'select case when $3 then (select count(*) from doomed) else (select count(*) from gone) end',
            v_table, v_key, v_spent)
            into v_count using v_now, p_limit, p_dry_run;
    else
        raise exception using errcode = '22023',
            message = 'the kind must be guests, sessions, refresh_tokens, idempotency_records, rate_limits, account_codes, '
                      'email_codes, auth_codes or mail_outbox';
    end case;
    return query select v_count, v_count = p_limit and not p_dry_run, null::uuid;
end
$$;

comment on function guestpass.prune_batch(text, integer, boolean, text[], uuid) is
    'GuestPass internal (guestpass prune): removes at most p_limit rows of one kind and returns how many (with '
    'p_dry_run, how many it would, removing nothing), whether to run another batch, and (guests) the id to pass as '
    'p_after to the next one, so that guests kept for their rows are examined once. Kinds: guests (anonymous, idle longer than the app''s '
    'guest_idle_days by their sessions, devices, updated_at and quota days, with no credits, premium, Apple identity, '
    'partner or row in public / p_schemas tables besides their devices; deleted with everything that cascades), '
    'sessions (ended over 7 days ago), refresh_tokens (rotated or revoked over 7 days ago), idempotency_records '
    '(consumptions over 2 days old), rate_limits (untouched for a day), account_codes, email_codes and auth_codes (used '
    'or expired a day ago), mail_outbox (sent or given up a week ago). '
    'Rows are taken FOR UPDATE SKIP LOCKED: concurrent pruners share the work. A dry run of guests counts only the '
    'candidates of one batch.';

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.prune_batch(text, integer, boolean, text[], uuid) from public;
