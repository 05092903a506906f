-- add the grants and row-level security policies that let a signed-in caller see its own user row and devices
-- Two walls: grants decide which commands and columns a role may use at all (anything else is 42501), policies
-- decide which rows. Policies are per command, scoped TO authenticated, and call the helpers as
-- (select auth.uid()) so the planner evaluates them once per statement. anon and service_role get no table
-- grants; the server inserts and updates devices and users through SECURITY DEFINER functions.

grant select on table public.users to authenticated;
grant update (onboarding_completed, timezone, language, notification_enabled) on table public.users to authenticated;
grant select on table public.devices to authenticated;

drop policy if exists users_select_own on public.users;
create policy users_select_own on public.users
    as permissive
    for select
    to authenticated
    using (id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy users_select_own on public.users is 'A caller reads only its own user row, in its own app.';

drop policy if exists users_update_own on public.users;
create policy users_update_own on public.users
    as permissive
    for update
    to authenticated
    using (id = (select auth.uid()) and app_id = (select auth.app_id()))
    with check (id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy users_update_own on public.users is 'A caller updates only its own user row, in its own app.';

drop policy if exists devices_select_own on public.devices;
create policy devices_select_own on public.devices
    as permissive
    for select
    to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy devices_select_own on public.devices is 'A caller reads only its own devices, in its own app.';
