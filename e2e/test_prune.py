"""`guestpass prune` from cron on two replicas at once: both finish, together they remove every stale guest exactly
once (300 here, aged rows), keep the guest that holds something, and `--dry-run --json` counts without removing. The
prunes reach PostgreSQL through PgBouncer in transaction pooling, as the servers do (each batch is one statement)."""

from __future__ import annotations

import json
import subprocess

from conftest import pgbouncer_environment, psql, run
from support import create_app


def test_two_concurrent_prunes_share_the_work(database):
    app = create_app(database, "prune-me")
    psql(database.super_url, f"""
        insert into public.users (app_id, updated_at)
        select '{app.app_id}', now() - interval '200 days' from generate_series(1, 300);
        insert into public.users (id, app_id, updated_at, is_premium)
        values ('00000000-0000-4000-8000-00000000beef', '{app.app_id}', now() - interval '200 days', true);
    """)
    env = {"DATABASE_URL": database.super_url}
    dry = json.loads(run([database.bin, "prune", "--dry-run", "--json", "--batch-size", "1000"], env=env))
    assert dry["dry_run"] is True and dry["removed"]["guests"] >= 300
    assert psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'") == "301"

    bounced = pgbouncer_environment(database.super_url)
    procs = [
        subprocess.Popen([database.bin, "prune", "--json", "--batch-size", "25"], env={**bounced, "PATH": "/usr/bin:/bin"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    removed = sum(json.loads(out)["removed"]["guests"] for out, _ in outputs)
    assert removed >= 300
    assert psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'") == "1", \
        "only the premium guest is left"


def test_the_idle_time_is_the_apps_setting(database):
    """`apps configure --guest-idle-days`: a guest idle 10 days stays under the default 90 and goes under 7; the same
    guest of an app left at the default stays. An out-of-range value is refused before it reaches the database."""
    strict, lenient = create_app(database, "prune-after-a-week"), create_app(database, "prune-after-the-default")
    env = {"DATABASE_URL": database.super_url}
    for app in (strict, lenient):
        psql(database.super_url, f"insert into public.users (app_id, updated_at) values ('{app.app_id}', now() - interval '10 days')")

    def guests(app) -> int:
        return int(psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'"))

    run([database.bin, "prune"], env=env)
    assert (guests(strict), guests(lenient)) == (1, 1), "10 idle days are fewer than the default 90"
    run([database.bin, "apps", "configure", "--app", strict.app_id, "--guest-idle-days", "7"], env=env)
    run([database.bin, "prune"], env=env)
    assert (guests(strict), guests(lenient)) == (0, 1)

    refused = subprocess.run([database.bin, "apps", "configure", "--app", strict.app_id, "--guest-idle-days", "0"],
                             env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--guest-idle-days must be in 1...3650" in refused.stderr
