-- the needs_account_setup trigger fires only when what it reads changed, not on every update of an account
-- 0032's users_mark_account_setup ran its PL/pgSQL function on every insert or update of a non-anonymous user: a
-- credit consume, a welcome grant, a premium or time-zone change each paid for a call that found nothing to do. As in
-- 0024, the check is now two triggers whose WHEN clause (evaluated without calling the function) lets it run only for
-- a new account, an account that was a guest until now, or a change of user_metadata (the name) or app_metadata (the
-- flag itself, were it replaced wholesale). What the flag says is unchanged.

drop trigger users_mark_account_setup on public.users;

create trigger users_mark_new_account_setup
    before insert on public.users
    for each row
    when (not new.is_anonymous)
    execute function guestpass.mark_account_setup();

create trigger users_mark_account_setup
    before update on public.users
    for each row
    when (
        not new.is_anonymous
        and (old.is_anonymous
             or new.user_metadata is distinct from old.user_metadata
             or new.app_metadata is distinct from old.app_metadata)
    )
    execute function guestpass.mark_account_setup();

comment on function guestpass.mark_account_setup() is
    'GuestPass: trigger function of users_mark_new_account_setup (a new account) and users_mark_account_setup (an '
    'account whose user_metadata or app_metadata changed, or a guest becoming an account): sets '
    'app_metadata.needs_account_setup to whether the account has no name (guestpass.account_name of '
    'user_metadata.full_name is null).';
