"""Root's one-time login links through a real Datasette: the cookie they set (issue 25 item 12)."""

from __future__ import annotations

import time
from http.cookies import SimpleCookie

import pytest
from support.plugin_world import make_datasette, running

from datasette_pi_memory import login
from datasette_pi_memory.server.serve import ensure_secret


async def log_in(ds, locations) -> SimpleCookie:
    """Follow a fresh login link; the cookie it sets."""
    link = login.mint(ensure_secret(locations), "http://localhost")
    res = await ds.client.get(link.removeprefix("http://localhost"))
    assert res.status_code == 302, res.text
    cookie = SimpleCookie()
    cookie.load(res.headers["set-cookie"])
    return cookie


def actor_cookie_expiry(ds, cookie: SimpleCookie) -> int | None:
    """When the signed ds_actor value itself says it expires (Datasette refuses it after), None if never."""
    from datasette.utils import baseconv

    data = ds.unsign(cookie["ds_actor"].value, "actor")
    return baseconv.base62.decode(data["e"]) if "e" in data else None


@pytest.mark.asyncio
async def test_the_login_cookie_is_http_only_same_site_and_lasts_a_day(locations, world):
    async with running(make_datasette(locations)) as ds:
        before = int(time.time())
        cookie = await log_in(ds, locations)
        morsel = cookie["ds_actor"]
        assert morsel["httponly"] is True  # scripts on a page never read it
        assert morsel["samesite"].lower() == "lax"
        assert morsel["max-age"] == str(login.COOKIE_SECONDS) == str(24 * 3600)
        expires = actor_cookie_expiry(ds, cookie)
        assert expires is not None and before + login.COOKIE_SECONDS <= expires <= time.time() + login.COOKIE_SECONDS
        page = await ds.client.get("/-/pi-memory", cookies={"ds_actor": morsel.value})
        assert page.status_code == 200
        assert (await ds.client.get("/-/pi-memory")).status_code == 403  # without the cookie, nothing


@pytest.mark.asyncio
async def test_the_login_cookie_lasts_what_the_login_seconds_setting_says(locations, world):
    async with running(make_datasette(locations, {"login_seconds": 600})) as ds:
        cookie = await log_in(ds, locations)
        assert cookie["ds_actor"]["max-age"] == "600"
        assert actor_cookie_expiry(ds, cookie) <= time.time() + 600 < time.time() + login.COOKIE_SECONDS


@pytest.mark.asyncio
@pytest.mark.parametrize("value", [0, -5, "a day", True, 10**12])
async def test_a_login_seconds_setting_that_is_not_a_duration_stops_the_start_with_an_example(locations, world, value):
    from datasette.utils import StartupError

    with pytest.raises(StartupError, match=r"login_seconds .*e\.g\. login_seconds: 86400"):
        async with running(make_datasette(locations, {"login_seconds": value})):
            pass
