"""Issue 35: a listener that cannot open stops `guestpass` with one line naming the listener, its address and the
setting that moves it (`ListenerError`), exit status 1, no stack trace, and no "listening on" line before it: `serve`
checks every listener's address before anything starts. The stand-ins' listeners are named the same way."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import COMMAND_TIMEOUT, free_port

API = "API listener {address} (GUESTPASS_HOST/GUESTPASS_PORT)"
METRICS = "metrics listener {address} (GUESTPASS_METRICS_ADDRESS)"
APPLE_STANDIN = "apple-standin listener {address} (--host/--port)"
IN_USE = "address already in use"
NOT_AVAILABLE = "address not available (no interface of this machine has it)"
PERMISSION_DENIED = "permission denied (a port below 1024 needs root or CAP_NET_BIND_SERVICE)"
NO_INTERFACE_HOST = "192.0.2.1"  # TEST-NET-1 (RFC 5737): an address no machine of ours has


def run_guestpass(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, env={**os.environ, "LOG_LEVEL": "info", "LOG_FORMAT": "text", **(env or {})}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
    )


def serve(database, **env: str) -> subprocess.CompletedProcess:
    """`guestpass serve` as the e2e servers run, but with `env` and its output kept."""
    return run_guestpass([database.bin, "serve"], {
        **database.serve_environment, "GUESTPASS_HOST": "127.0.0.1", "GUESTPASS_PORT": str(free_port()),
        "GUESTPASS_METRICS_ADDRESS": "127.0.0.1:0", **env,
    })


def assert_stops_with(proc: subprocess.CompletedProcess, message: str) -> None:
    """Exit status 1 and `Error: <message>` as the only line: nothing listened before it, no stack trace."""
    assert proc.returncode == 1, proc
    assert proc.stdout == "", proc.stdout
    assert proc.stderr.splitlines() == [f"Error: {message}"], proc.stderr


@pytest.fixture(scope="module")
def first(start_server):
    """The server already running: a second one started beside it with its addresses must stop."""
    return start_server("listeners-first", GUESTPASS_METRICS_ADDRESS=f"127.0.0.1:{free_port()}")


def test_a_second_server_on_the_api_port_names_the_api_listener(first, database):
    proc = serve(database, GUESTPASS_PORT=str(first.port))
    assert_stops_with(proc, f"{API.format(address=f'127.0.0.1:{first.port}')}: {IN_USE}")


def test_a_second_server_on_the_metrics_port_names_the_metrics_listener(first, database):
    address = first.env["GUESTPASS_METRICS_ADDRESS"]
    api_port = free_port()
    proc = serve(database, GUESTPASS_PORT=str(api_port), GUESTPASS_METRICS_ADDRESS=address)
    assert_stops_with(proc, f"{METRICS.format(address=address)}: {IN_USE}")
    with socket.socket() as probe:  # the API port it checked first was let go
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", api_port))


@pytest.mark.parametrize("listener", ["api", "metrics"])
def test_an_address_no_interface_has_names_the_listener(database, listener):
    port = free_port()
    address = f"{NO_INTERFACE_HOST}:{port}"
    if listener == "api":
        proc = serve(database, GUESTPASS_HOST=NO_INTERFACE_HOST, GUESTPASS_PORT=str(port))
        assert_stops_with(proc, f"{API.format(address=address)}: {NOT_AVAILABLE}")
    else:
        proc = serve(database, GUESTPASS_METRICS_ADDRESS=address)
        assert_stops_with(proc, f"{METRICS.format(address=address)}: {NOT_AVAILABLE}")


def test_a_stand_in_on_a_taken_port_names_its_listener(database):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        proc = run_guestpass([database.bin, "apple-standin", "--host", "127.0.0.1", "--port", str(port)])
    assert_stops_with(proc, f"{APPLE_STANDIN.format(address=f'127.0.0.1:{port}')}: {IN_USE}")


def test_a_low_port_without_the_privilege_is_permission_denied(database):
    """As an unprivileged user (root runs the binary as `nobody` through setpriv): port 1 is refused."""
    if int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text()) <= 1:
        pytest.skip("every port is unprivileged on this machine")
    argv = [database.bin, "apple-standin", "--host", "127.0.0.1", "--port", "1"]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root, and no setpriv to drop the privilege")
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    assert_stops_with(run_guestpass(argv), f"{APPLE_STANDIN.format(address='127.0.0.1:1')}: {PERMISSION_DENIED}")
