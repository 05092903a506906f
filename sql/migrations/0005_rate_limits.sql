-- rate limits: token-bucket state per bucket name
-- Versioned: applied once, never edited after a release. The functions that take and peek live in
-- repeatable/05_rate_limits.sql, with the design of the buckets.

create table guestpass.rate_limits (
    bucket text not null,
    tokens double precision not null,
    updated_at timestamptz not null,
    constraint rate_limits_pkey primary key (bucket),
    constraint rate_limits_bucket_check check (bucket <> ''),
    constraint rate_limits_tokens_check check (tokens >= 0)
);

comment on table guestpass.rate_limits is
    'GuestPass: token-bucket state per bucket name (e.g. signup:ip:<address>, signup:app:<app id>): the tokens left '
    'at updated_at. Capacity and refill rate come from configuration with each call; a missing row is a full bucket.';

