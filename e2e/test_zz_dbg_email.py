import pytest
pytest.register_assert_rewrite("email_support")
from email_support import *
from test_email_attacks import signed_up
pytest_plugins = ("email_support",)

def test_dbg(email_server, email_app, mail_catcher, http):
    server, app = email_server, email_app
    address, _, user_id, _, _, link = signed_up(server, app, mail_catcher)
    r = http.head(on_server(link, server), follow_redirects=False)
    print("HEAD", r.status_code, r.headers.get("location"))
    opened = open_link(http, server, link)
    print("GET", opened.status_code, opened.headers.get("location")[:80])
    r = http.options(on_server(link, server))
    print("OPTIONS", r.status_code, r.headers.get("location"))
