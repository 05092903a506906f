"""Logs: the request id is echoed and logged; the session-end audit (log_audit, run by conftest after every test)
finds a secret when one is there."""

from __future__ import annotations

import re

from log_audit import audit


def test_the_request_id_is_echoed_and_logged(http, server):
    sent = http.get(server.url + "/health/live", headers={"X-Request-Id": "trace-abc.123_X"})
    assert sent.headers["x-request-id"] == "trace-abc.123_X"
    made_up = http.get(server.url + "/health/live", headers={"X-Request-Id": "no spaces allowed"})
    assert re.fullmatch(r"[0-9a-f]{32}", made_up.headers["x-request-id"]), "an unsafe id is replaced by the server's"
    assert '"request_id":"trace-abc.123_X"' in server.log_path.read_text(errors="replace")


def test_the_audit_finds_a_planted_secret(tmp_path):
    secret = "0f8fad5b-d9cb-469f-a165-70867728950e"
    clean = '{"time":"t","level":"info","message":"request","request_id":"r","route":"/x","status":200,"duration_ms":1,"method":"GET"}'
    (tmp_path / "server.log").write_text(clean + "\n")
    assert audit(tmp_path, {secret}, whole_suite=False) == []
    (tmp_path / "server.log").write_text(clean + "\n" + clean.replace('"r"', '"' + secret + '"') + "\n")
    assert audit(tmp_path, {secret}, whole_suite=False) == [
        "server.log:2: a secret the suite used (device secret, password, link token)"
    ]
    (tmp_path / "other.log").write_text("apikey gp_pub_" + "a" * 64 + "\n")
    assert "other.log:1: API key" in audit(tmp_path, set(), whole_suite=False)
    # A mailed code is found as a whole number, not inside a timestamp, a duration or an id that contains its digits.
    (tmp_path / "other.log").unlink()
    timestamps = clean.replace('"t"', '"2026-11-27T19:17:31.428571Z"').replace('"r"', '"ab428571cd"').replace(":1,", ":0.428571,")
    (tmp_path / "server.log").write_text(timestamps + "\n")
    assert audit(tmp_path, set(), whole_suite=False, codes={"428571"}) == []
    (tmp_path / "server.log").write_text(timestamps + "\n" + clean.replace('"r"', '"code 428571"') + "\n")
    assert audit(tmp_path, set(), whole_suite=False, codes={"428571"}) == ["server.log:2: a mailed one-time code"]
