-- users and devices: what a caller may read and change of its own rows, the updated_at touch, the device list
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- add the grants and row-level security policies that let a signed-in caller see its own user row and devices
-- Two walls: grants decide which commands and columns a role may use at all (anything else is 42501), policies
-- decide which rows. Policies are per command, scoped TO authenticated, and call the helpers as
-- (select auth.uid()) so the planner evaluates them once per statement. anon and service_role get no table
-- grants; the server inserts and updates devices and users through SECURITY DEFINER functions.

-- What the request roles may touch: authenticated reads its own user row and devices and updates four of its
-- own columns (the time zone only through public.set_timezone, which checks the name and re-anchors the quota day).
grant select on table public.users to authenticated;
grant update (onboarding_completed, timezone, language, notification_enabled) on table public.users to authenticated;
revoke update (timezone) on table public.users from authenticated;
grant select on table public.devices to authenticated;
revoke all on table guestpass.device_secrets from public, anon, authenticated, service_role;

drop policy if exists users_select_own on public.users;
create policy users_select_own on public.users for select to authenticated
    using (id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy users_select_own on public.users is 'A caller reads only its own user row, in its own app.';

drop policy if exists users_update_own on public.users;
create policy users_update_own on public.users for update to authenticated
    using (id = (select auth.uid()) and app_id = (select auth.app_id()))
    with check (id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy users_update_own on public.users is 'A caller updates only its own user row, in its own app.';

drop policy if exists devices_select_own on public.devices;
create policy devices_select_own on public.devices for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy devices_select_own on public.devices is 'A caller reads only its own devices, in its own app.';

create or replace function guestpass.set_updated_at()
    returns trigger
    language plpgsql set search_path = '' as $$
begin
    new.updated_at := pg_catalog.now();
    return new;
end
$$;

comment on function guestpass.set_updated_at() is
    'GuestPass: BEFORE UPDATE trigger that sets updated_at to the transaction time.';

create or replace trigger users_set_updated_at
    before update on public.users
    for each row
    execute function guestpass.set_updated_at();

-- 3. Devices of the caller.
create or replace function public.list_devices()
    returns table (
        device_id uuid, model text, os_version text, app_version text, created_at timestamptz,
        last_seen_at timestamptz, is_current boolean
    )
    language sql stable security definer set search_path = '' as $$
    select d.id, d.model, d.os_version, d.app_version, d.created_at, d.last_seen_at, d.id = auth.device_id()
    from public.devices as d
    where d.user_id = auth.uid() and d.app_id = auth.app_id() and d.revoked_at is null
    order by d.created_at, d.id
$$;

comment on function public.list_devices() is
    'The caller''s devices that are not revoked: public id, model, OS and app version, created, last seen, and whether '
    'it is the caller''s own (claim device_id), oldest first.';

create or replace function guestpass.end_device(p_device uuid, p_at timestamptz)
    returns void
    language sql volatile set search_path = '' as $$
    update public.devices as d set revoked_at = p_at where d.id = p_device;
    update guestpass.refresh_tokens as t set revoked_at = p_at
    where t.session_id in (select s.id from guestpass.sessions as s where s.device_id = p_device) and t.revoked_at is null;
    update guestpass.sessions as s set revoked_at = p_at where s.device_id = p_device and s.revoked_at is null;
$$;

comment on function guestpass.end_device(uuid, timestamptz) is
    'GuestPass internal: revokes device p_device at p_at with its sessions and refresh tokens (its secret then signs in '
    'no more: PT401). What a revocation does, whoever asks: the user (public.revoke_device) or an operator '
    '(guestpass_console.revoke_device); the callers check the device is theirs to revoke.';

create or replace function public.revoke_device(p_device_id uuid)
    returns boolean
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform 1 from public.users as u where u.id = v_user for no key update;
    if not exists (
        select 1 from public.devices as d
        where d.id = p_device_id and d.user_id = v_user and d.app_id = v_app and d.revoked_at is null
    ) then
        return false;
    end if;
    -- The last way in stays: another live device, an Apple identity or a live recovery code.
    if not exists (
            select 1 from public.devices as d where d.user_id = v_user and d.id <> p_device_id and d.revoked_at is null)
       and not exists (select 1 from guestpass.identities as i where i.user_id = v_user)
       and not exists (
            select 1 from guestpass.account_codes as a where a.user_id = v_user and a.kind = 'recovery' and a.used_at is null)
    then
        raise exception using errcode = 'PT409', message = 'this is the account''s last way in',
            hint = 'link Sign in with Apple or make a recovery code first';
    end if;
    perform guestpass.end_device(p_device_id, v_now);
    return true;
end
$$;

comment on function public.revoke_device(uuid) is
    'Revokes one of the caller''s devices: its sessions and refresh tokens end at once and its secret signs in no more '
    '(PT401 device revoked). False when it is not a live device of the caller. The account''s last way in (no other '
    'device, no Apple identity, no recovery code) is refused: PT409.';

-- Row-level security, on and forced for the tables of this area (0003_users_and_devices.sql): a role, the tables'
-- owner included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table public.users enable row level security, force row level security;
alter table public.devices enable row level security, force row level security;
alter table guestpass.device_secrets enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.set_updated_at(), public.list_devices(), public.revoke_device(uuid),
    guestpass.end_device(uuid, timestamptz) from public;
grant execute on function public.list_devices(), public.revoke_device(uuid) to authenticated;
