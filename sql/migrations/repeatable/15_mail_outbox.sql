-- mail outbox: delivery of the mail the email functions queue (repeatable/14_email.sql, guestpass.queue_mail)
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- A mail is a row of guestpass.mail_outbox, written in the transaction of the code it carries: committed, it is
-- never lost; rolled back, it never existed. Every server runs a sender (MailSender, a swift-service-lifecycle
-- service) that loops:
--
-- 1. guestpass_server.mail_claim takes due rows with FOR UPDATE SKIP LOCKED and leases them: next_attempt_at (and
--    claimed_until) move to now + the lease, attempts + 1, in one short transaction that commits before any SMTP
--    traffic. Replicas claiming at once take disjoint rows; a lease nobody finishes (the sender crashed, was killed)
--    makes the row due again when it runs out, so a kill -9 between commit and send delivers after the restart.
-- 2. The sender renders and sends each mail, then records the outcome: guestpass_server.mail_sent (sent_at, payload
--    erased), or guestpass_server.mail_failed (a transient failure backs off 5 s · 2^(attempts - 1), at most an
--    hour; a permanent one, or the last attempt, sets failed_at and erases the payload).
--
-- What can repeat: a mail the relay accepted whose mail_sent did not commit (the sender died, or the database was
-- unreachable, in between) is sent again when its lease runs out. SMTP gives no way to ask a relay whether it has a
-- message already, so delivery is at least once; in the normal case (no crash in that window) exactly once.

create or replace function guestpass_server.mail_claim(p_limit integer, p_lease_seconds integer)
    returns table (
        id bigint, app_id uuid, kind text, recipient text, email text, new_email text, verify_type text, redirect_to text,
        payload bytea, attempts integer, smtp_host text, smtp_port integer, smtp_user text, smtp_password bytea,
        smtp_security text, smtp_sender text, smtp_sender_name text, smtp_ca_file text, template jsonb, site_url text,
        otp_length integer
    )
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
begin
    if p_limit is null or p_limit not between 1 and 1000 or p_lease_seconds is null or p_lease_seconds not between 1 and 3600 then
        raise exception using errcode = '22023', message = 'limit must be 1 to 1000 and the lease 1 to 3600 seconds';
    end if;
    return query
    with due as (
        select o.id
        from guestpass.mail_outbox as o
        where o.sent_at is null and o.failed_at is null and o.next_attempt_at <= v_now
        order by o.next_attempt_at, o.id
        limit p_limit
        for update skip locked
    ),
    claimed as (
        update guestpass.mail_outbox as o
        set next_attempt_at = v_now + make_interval(secs => p_lease_seconds),
            claimed_until = v_now + make_interval(secs => p_lease_seconds),
            attempts = o.attempts + 1
        from due
        where o.id = due.id
        returning o.*
    )
    select c.id, c.app_id, c.kind, c.recipient, c.email, c.new_email, c.verify_type, c.redirect_to, c.payload, c.attempts,
           a.smtp_host, a.smtp_port, a.smtp_user, a.smtp_password, a.smtp_security, a.smtp_sender, a.smtp_sender_name,
           a.smtp_ca_file, a.email_templates -> c.kind, a.site_url, a.email_otp_length
    from claimed as c
    join guestpass.apps as a on a.id = c.app_id
    order by c.id;
end
$$;

comment on function guestpass_server.mail_claim(integer, integer) is
    'GuestPass server (the mail sender): leases up to p_limit due mails for p_lease_seconds (FOR UPDATE SKIP LOCKED: '
    'concurrent senders take disjoint rows; attempts + 1) and returns them with their app''s SMTP settings (the '
    'password sealed), template of the mail''s kind (null = built in), site URL and code length.';

create or replace function guestpass_server.mail_sent(p_id bigint)
    returns void
    language sql volatile security definer set search_path = '' as $$
    update guestpass.mail_outbox as o
    set sent_at = guestpass.clock(), payload = null, claimed_until = null, last_error = null
    where o.id = p_id and o.sent_at is null
$$;

comment on function guestpass_server.mail_sent(bigint) is
    'GuestPass server (the mail sender): mail p_id was accepted by the relay: sent_at, and its payload (the code) erased.';

create or replace function guestpass_server.mail_failed(p_id bigint, p_error text, p_permanent boolean, p_max_attempts integer)
    returns void
    language sql volatile security definer set search_path = '' as $$
    update guestpass.mail_outbox as o
    set failed_at = case when p_permanent or o.attempts >= p_max_attempts then guestpass.clock() end,
        payload = case when p_permanent or o.attempts >= p_max_attempts then null else o.payload end,
        next_attempt_at = guestpass.clock() + least(interval '1 hour', interval '5 seconds' * power(2, greatest(o.attempts - 1, 0))),
        claimed_until = null,
        last_error = left(p_error, 1000)
    where o.id = p_id and o.sent_at is null
$$;

comment on function guestpass_server.mail_failed(bigint, text, boolean, integer) is
    'GuestPass server (the mail sender): sending mail p_id failed with p_error (never a secret): a transient failure '
    'is due again after 5 s · 2^(attempts - 1) (at most an hour); a permanent one, or attempt p_max_attempts, gives up '
    '(failed_at, payload erased).';

create or replace function guestpass_server.mail_queue_state()
    returns table (queued bigint, oldest_age_seconds double precision)
    language sql stable security definer set search_path = '' as $$
    select count(*), coalesce(extract(epoch from guestpass.clock() - min(o.created_at)), 0)::double precision
    from guestpass.mail_outbox as o
    where o.sent_at is null and o.failed_at is null
$$;

comment on function guestpass_server.mail_queue_state() is
    'GuestPass server (metrics): how many mails wait to be sent, and the age in seconds of the oldest (0 for none).';

-- Row-level security, on and forced for the table of this area (0011_email.sql): a role, the table's owner
-- included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.mail_outbox enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the server's login role (the sender runs as it, without a request
-- role) is the only caller of each.
revoke all on function guestpass_server.mail_claim(integer, integer), guestpass_server.mail_sent(bigint),
    guestpass_server.mail_failed(bigint, text, boolean, integer), guestpass_server.mail_queue_state() from public;
grant execute on function guestpass_server.mail_claim(integer, integer), guestpass_server.mail_sent(bigint),
    guestpass_server.mail_failed(bigint, text, boolean, integer), guestpass_server.mail_queue_state()
    to guestpass_authenticator;
