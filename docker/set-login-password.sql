-- Sets the password of the login role the API connects as (run by the compose service
-- `set-login-password` after `migrate`). The password comes from the environment variable
-- GUESTPASS_LOGIN_PASSWORD, never from the command line. Needs psql 15+ (\getenv).
\set ON_ERROR_STOP on
\getenv login_password GUESTPASS_LOGIN_PASSWORD
\if :{?login_password}
ALTER ROLE guestpass_authenticator WITH LOGIN PASSWORD :'login_password';
\else
DO $$ BEGIN RAISE EXCEPTION 'GUESTPASS_LOGIN_PASSWORD is not set'; END $$;
\endif
