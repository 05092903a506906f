-- share codes and partners: a public code to find a partner by, never a way to sign in (the Flowers app's document)
-- The Flowers app paired users by a 4-digit code that also restored an account: anyone who learnt or guessed a code
-- took the account, and 10,000 codes collide at 10,000 users. Here a share code only finds a partner:
--
-- * guestpass.share_codes: one code per user and app, unique per app, from an alphabet without look-alikes
--   (23456789ABCDEFGHJKMNPQRSTUVWXYZ: no 0/O, 1/I/L) or digits only for a keypad (per-app), of a per-app length
--   (default 6: 887 million codes), drawn from the CSPRNG (the random bytes of gen_random_uuid, rejection-sampled so that every
--   character is equally likely), created on first request with a bounded collision retry, rotatable.
-- * public.partners: a pairing, one row per direction, so that the caller's partners are one indexed lookup of its
--   own rows (row-level security: a user reads only rows where it is user_id): auth.partner_ids(), an inlinable
--   set-returning function for policies ("my partner's rows"), and auth.is_partner(uuid) for readability (not
--   inlinable: PostgreSQL never inlines a scalar SQL function whose body holds a subquery).
-- * public.pair_with_code(p_code): takes a token from the caller's and the client address's pairing buckets before
--   it looks the code up (so the limit says nothing about codes), answers a wrong and an unknown code alike
--   ({paired: false, reason: no_such_code}), refuses pairing with yourself, twice, or past the per-app partner limit
--   (default 1), with both users locked in id order so that concurrent pairings cannot pass the limit. Refusals are
--   answers, not errors: an error would roll the tokens back and leave a guesser unlimited.

alter table guestpass.apps
    add column share_code_length integer not null default 6,
    add column share_code_digits_only boolean not null default false,
    add column partner_limit integer not null default 1,
    add constraint apps_share_code_length_check check (share_code_length between 4 and 12),
    add constraint apps_partner_limit_check check (partner_limit between 1 and 100);

comment on column guestpass.apps.share_code_length is 'Share codes: characters per code (4 to 12, default 6).';
comment on column guestpass.apps.share_code_digits_only is 'Share codes: digits only (a keypad), else the look-alike-free alphabet.';
comment on column guestpass.apps.partner_limit is 'Partners a user may have at once (default 1).';

-- 1. Codes.

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

alter table guestpass.share_codes enable row level security;
alter table guestpass.share_codes force row level security;
revoke all on table guestpass.share_codes from public;

create function guestpass.new_share_code(p_length integer, p_digits_only boolean)
    returns text
    language plpgsql
    volatile
    set search_path = ''
    as $$
declare
    v_alphabet constant text := case when p_digits_only then '0123456789' else '23456789ABCDEFGHJKMNPQRSTUVWXYZ' end;
    v_size constant integer := char_length(v_alphabet);
    -- The largest multiple of the alphabet's size below 256: bytes at or above it are drawn again (no bias).
    v_limit constant integer := 256 - 256 % v_size;
    v_code text := '';
    v_bytes bytea;
    v_index integer;
    v_byte integer;
begin
    while char_length(v_code) < p_length loop
        -- gen_random_uuid draws from the CSPRNG; bytes 0-5 and 10-15 of a v4 uuid are wholly random.
        v_bytes := uuid_send(gen_random_uuid());
        foreach v_index in array array[0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15] loop
            v_byte := get_byte(v_bytes, v_index);
            if v_byte < v_limit and char_length(v_code) < p_length then
                v_code := v_code || substr(v_alphabet, 1 + v_byte % v_size, 1);
            end if;
        end loop;
    end loop;
    return v_code;
end
$$;

revoke all on function guestpass.new_share_code(integer, boolean) from public;

comment on function guestpass.new_share_code(integer, boolean) is
    'GuestPass internal: a random share code of p_length characters from 0-9 (p_digits_only) or '
    '23456789ABCDEFGHJKMNPQRSTUVWXYZ (no 0/O, 1/I/L), each character uniform (CSPRNG bytes of gen_random_uuid, rejection-sampled).';

create function guestpass.assign_share_code(p_user uuid, p_app uuid, p_rotate boolean)
    returns text
    language plpgsql
    volatile
    set search_path = ''
    as $$
declare
    v_length integer;
    v_digits boolean;
    v_code text;
begin
    if not p_rotate then
        select s.code into v_code from guestpass.share_codes as s where s.user_id = p_user;
        if found then
            return v_code;
        end if;
    end if;
    select a.share_code_length, a.share_code_digits_only into v_length, v_digits from guestpass.apps as a where a.id = p_app;
    for v_attempt in 1..10 loop
        v_code := guestpass.new_share_code(v_length, v_digits);
        begin
            insert into guestpass.share_codes as s (user_id, app_id, code) values (p_user, p_app, v_code)
            on conflict (user_id) do update set code = excluded.code, created_at = excluded.created_at
            where p_rotate or s.code is null;
            select s.code into v_code from guestpass.share_codes as s where s.user_id = p_user;
            return v_code;
        exception when unique_violation then
            -- Another user of the app holds that code: draw again.
            null;
        end;
    end loop;
    raise exception using errcode = 'PT503', message = 'no free share code found; try again',
        hint = 'the app''s codes are nearly exhausted: make them longer (guestpass apps configure --share-code-length)';
end
$$;

revoke all on function guestpass.assign_share_code(uuid, uuid, boolean) from public;

comment on function guestpass.assign_share_code(uuid, uuid, boolean) is
    'GuestPass internal: the share code of user p_user of app p_app, creating it if missing, or a new one with '
    'p_rotate. A drawn code another user holds is drawn again, at most 10 times, then PT503.';

create function public.get_share_code()
    returns text
    language sql
    volatile
    security definer
    set search_path = ''
    as $$
    select guestpass.assign_share_code(c.user_id, c.app_id, false) from guestpass.require_user_and_app() as c
$$;

create function public.rotate_share_code()
    returns text
    language sql
    volatile
    security definer
    set search_path = ''
    as $$
    select guestpass.assign_share_code(c.user_id, c.app_id, true) from guestpass.require_user_and_app() as c
$$;

revoke all on function public.get_share_code() from public;
revoke all on function public.rotate_share_code() from public;
grant execute on function public.get_share_code() to authenticated;
grant execute on function public.rotate_share_code() to authenticated;

comment on function public.get_share_code() is
    'The caller''s share code (created on the first call): give it to a partner to pair with pair_with_code. It '
    'never signs anyone in.';
comment on function public.rotate_share_code() is
    'A new share code for the caller; the old one pairs no more.';

-- 2. Partners.

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

alter table public.partners enable row level security;
alter table public.partners force row level security;
grant select on table public.partners to authenticated;

create policy partners_select_own on public.partners
    as permissive
    for select
    to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy partners_select_own on public.partners is 'A user reads only its own pairings, in its own app.';

create function auth.partner_ids()
    returns setof uuid
    language sql
    stable
    as $$
    select p.partner_id from public.partners as p where p.user_id = auth.uid() and p.app_id = auth.app_id()
$$;

create function auth.is_partner(p_user uuid)
    returns boolean
    language sql
    stable
    as $$
    select p_user in (select p.partner_id from auth.partner_ids() as p (partner_id))
$$;

grant execute on function auth.partner_ids() to authenticated;
grant execute on function auth.is_partner(uuid) to authenticated;

comment on function auth.partner_ids() is
    'The caller''s partners (public.partners, its own rows). A one-query SQL set-returning function: inlined where it '
    'stands in FROM, e.g. a policy "recipient_id in (select p from auth.partner_ids() as p)".';
comment on function auth.is_partner(uuid) is
    'Whether p_user is a partner of the caller. Reads as a policy would want, but PostgreSQL never inlines a SQL '
    'function whose body holds a subquery: in hot policies prefer "col in (select p from auth.partner_ids() as p)", which is.';

create function public.pair_with_code(p_code text)
    returns jsonb
    language plpgsql
    volatile
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_partner uuid;
    v_limit integer;
    v_code text := upper(btrim(p_code));
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    -- Every try takes a token first, found or not: the limit reveals nothing about codes.
    perform guestpass.enforce_rate_limit('pair:user:' || v_user::text, 10, 10.0 / 3600);
    perform guestpass.enforce_rate_limit(
        'pair:ip:' || guestpass.client_address_key(current_setting('request.client_ip', true)), 30, 30.0 / 3600
    );

    -- Refusals are answers, not errors: an error would roll back the tokens just taken, and a guesser would never
    -- run out of them.
    select s.user_id into v_partner from guestpass.share_codes as s where s.app_id = v_app and s.code = v_code;
    if not found then
        return jsonb_build_object('paired', false, 'reason', 'no_such_code');
    end if;
    if v_partner = v_user then
        return jsonb_build_object('paired', false, 'reason', 'own_code');
    end if;

    -- Both users, in id order: concurrent pairings of either run one at a time.
    perform 1 from public.users as u where u.id in (v_user, v_partner) order by u.id for no key update;
    if exists (select 1 from public.partners as p where p.user_id = v_user and p.partner_id = v_partner) then
        return jsonb_build_object('paired', false, 'reason', 'already_partners');
    end if;
    select a.partner_limit into v_limit from guestpass.apps as a where a.id = v_app;
    if (select count(*) from public.partners as p where p.user_id = v_user) >= v_limit
       or (select count(*) from public.partners as p where p.user_id = v_partner) >= v_limit then
        return jsonb_build_object('paired', false, 'reason', 'partner_limit');
    end if;

    insert into public.partners (app_id, user_id, partner_id)
    values (v_app, v_user, v_partner), (v_app, v_partner, v_user);
    return jsonb_build_object('paired', true, 'partner_id', v_partner);
end
$$;

create function public.list_partners()
    returns table (partner_id uuid, full_name text, paired_at timestamptz)
    language sql
    stable
    security definer
    set search_path = ''
    as $$
    select p.partner_id, guestpass.account_name(u.user_metadata ->> 'full_name'), p.created_at
    from public.partners as p
    join public.users as u on u.id = p.partner_id
    where p.user_id = auth.uid() and p.app_id = auth.app_id()
    order by p.created_at, p.partner_id
$$;

create function public.unpair(p_partner_id uuid)
    returns boolean
    language plpgsql
    volatile
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_count integer;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    delete from public.partners as p
    where p.app_id = v_app
      and ((p.user_id = v_user and p.partner_id = p_partner_id) or (p.user_id = p_partner_id and p.partner_id = v_user));
    get diagnostics v_count = row_count;
    return v_count > 0;
end
$$;

revoke all on function public.pair_with_code(text) from public;
revoke all on function public.list_partners() from public;
revoke all on function public.unpair(uuid) from public;
grant execute on function public.pair_with_code(text) to authenticated;
grant execute on function public.list_partners() to authenticated;
grant execute on function public.unpair(uuid) to authenticated;

comment on function public.pair_with_code(text) is
    'Pairs the caller with the owner of share code p_code (case and surrounding spaces ignored); both see it. Takes '
    'a token from the caller''s pairing bucket (pair:user:<id>, 10, refilled 10 an hour) and the client address''s '
    '(pair:ip:<address>, 30, 30 an hour) first: empty → PT429 (with the seconds to wait). Returns {paired: true, '
    'partner_id}, or {paired: false, reason}: no_such_code (a wrong or unknown code alike), own_code, '
    'already_partners, partner_limit (either user at the app''s limit). Refusals are answers, not errors, so that '
    'the tokens they took stay taken.';
comment on function public.list_partners() is
    'The caller''s partners: id, name (when set) and when they paired, oldest first.';
comment on function public.unpair(uuid) is
    'Ends the pairing of the caller and p_partner_id, for both; true when there was one.';
