"""Apple's keys as the server caches them: a rotation on the stand-in (its own, so no other test sees it) makes the
server fetch the keys again at most once a minute, whatever `kid`s tokens make up.
"""

from __future__ import annotations

import uuid

from test_apple_sign_in import apple, apple_app, sign_in  # noqa: F401 (fixtures: a stand-in and app of this module)


def test_a_new_apple_key_is_fetched_once_and_made_up_kids_do_not_hammer_apple(http, server, apple, apple_app):  # noqa: F811
    assert sign_in(http, server, apple_app, apple.id_token("apple-user-7")).status_code == 200
    apple.rotate()
    fetches = apple.key_fetches()
    # The new kid is unknown to the server's cache, and its last fetch (for the sign-in above) is less than a minute
    # old: the token is refused without asking Apple, as are 20 tokens with made-up kids.
    first = sign_in(http, server, apple_app, apple.id_token("apple-user-8"))
    assert first.status_code == 401, first.text
    for _ in range(20):
        assert sign_in(http, server, apple_app, apple.id_token("apple-user-9", kid=f"made-up-{uuid.uuid4()}")).status_code == 401
    assert apple.key_fetches() == fetches

