"""Issue 35: `./scripts/serve` beside another server. A taken API port (the URL apps are pointed at) stops it at once,
before it installs or builds anything, naming GUESTPASS_PORT and a free port to set; a taken metrics port
(127.0.0.1:9464) moves the metrics to a free loopback port (`gp_pick_port` of scripts/lib/common.sh, tested here on
its own: the rest of scripts/serve installs packages and runs a cluster)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMON = ROOT / "scripts" / "lib" / "common.sh"
LOOPBACK = "127.0.0.1"


@pytest.fixture()
def held_port():
    """A loopback port something listens on, as another server's would be."""
    with socket.socket() as held:
        held.bind((LOOPBACK, 0))
        held.listen()
        yield held.getsockname()[1]


def common(call: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'. "{COMMON}" && {call}'], capture_output=True, text=True, timeout=60)


def bindable(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def test_a_free_port_is_kept():
    with socket.socket() as spare:
        spare.bind((LOOPBACK, 0))
        port = spare.getsockname()[1]
    proc = common(f"gp_pick_port {LOOPBACK} {port} && gp_port_free {LOOPBACK} {port}")
    assert proc.returncode == 0 and proc.stdout.strip() == str(port), proc


def test_a_taken_port_is_swapped_for_a_free_one(held_port):
    proc = common(f"gp_pick_port {LOOPBACK} {held_port}")
    picked = int(proc.stdout.strip())
    assert proc.returncode == 0 and picked not in (held_port, 0), proc
    assert bindable(picked)
    assert common(f"gp_port_free {LOOPBACK} {held_port}").returncode == 1


def test_serve_stops_at_once_on_a_taken_api_port_naming_the_variable(held_port):
    proc = subprocess.Popen(
        [str(ROOT / "scripts" / "serve")], env={**os.environ, "GUESTPASS_HOST": LOOPBACK, "GUESTPASS_PORT": str(held_port)},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # it went on to install and build: the check is gone
        proc.communicate()
        pytest.fail("scripts/serve did not stop on a taken GUESTPASS_PORT")
    assert proc.returncode == 1 and stdout == "", (proc.returncode, stdout, stderr)
    match = re.fullmatch(
        rf"\[serve\] error: {LOOPBACK}:{held_port} is taken \(another \./scripts/serve\?\): set GUESTPASS_PORT to serve the "
        rf"API elsewhere, e\.g\.\n  GUESTPASS_PORT=(\d+) \./scripts/serve\n", stderr,
    )
    assert match, stderr
    assert bindable(int(match.group(1)))
