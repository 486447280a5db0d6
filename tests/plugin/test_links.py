"""Every link answers: a crawl from /-/pi-memory over the real-Pi corpus follows each same-origin link of every page
(bounded) and gets no 404 or 500; and a session page named by a short id or a prefix redirects to its full id."""

from __future__ import annotations

import re
from collections import deque
from html import unescape
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from support.plugin_world import ROOT, make_datasette, running
from support.real_pi_index import session_id

from pimem_index.search.session_ids import short_ids

MAX_PAGES = 600  # the crawl's bound: the pi-memory pages first, then Datasette's own
ORIGIN = "http://localhost"
_HREF = re.compile(r"""(?:href|src)\s*=\s*["']([^"']*)["']""", re.IGNORECASE)


def links(page_url: str, html: str) -> list[str]:
    """The same-origin links of a page, absolute paths with their query strings, without fragments."""
    found = []
    for raw in _HREF.findall(html):
        href = unescape(raw).strip()
        if not href or href.startswith(("javascript:", "mailto:", "data:", "#")):
            continue
        url = urldefrag(urljoin(ORIGIN + page_url, href))[0]
        parts = urlsplit(url)
        if parts.scheme + "://" + parts.netloc != ORIGIN:
            continue
        found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found


async def crawl(ds, start: str) -> tuple[dict[str, int], dict[str, str]]:
    """Status of each page reached from `start` (redirects followed), and where each was first linked from."""
    seen: dict[str, int] = {}
    linked_from: dict[str, str] = {start: "(start)"}
    ours: deque[str] = deque([start])
    theirs: deque[str] = deque()
    while (ours or theirs) and len(seen) < MAX_PAGES:
        url = ours.popleft() if ours else theirs.popleft()
        if url in seen:
            continue
        response = await ds.client.get(url, actor=ROOT)
        seen[url] = response.status_code
        found = [response.headers["location"]] if response.status_code in (301, 302) else []
        if response.status_code == 200 and "html" in response.headers.get("content-type", ""):
            found += links(url, response.text)
        for link in found:
            link = links(url, f'<a href="{link}">')[0] if link.startswith(("http", "/", "?")) else link
            if link not in seen and link not in linked_from:
                linked_from[link] = url
                (ours if link.startswith("/-/pi-memory") else theirs).append(link)
    return seen, linked_from


@pytest.mark.asyncio
async def test_every_link_from_the_overview_answers_on_the_real_pi_corpus(corpus):
    copied, locations, conn = corpus
    async with running(make_datasette(locations)) as ds:
        seen, linked_from = await crawl(ds, "/-/pi-memory")
    broken = {url: (status, linked_from[url]) for url, status in seen.items() if status not in (200, 301, 302)}
    assert broken == {}, "links that do not answer (status, the page linking them)"
    every_session = {session_id(copied, role) for role in copied.journals}
    reached = {url.split("/-/pi-memory/sessions/")[1].split("?")[0] for url in seen if "/-/pi-memory/sessions/" in url}
    assert every_session <= reached, "every session page is reached from the overview"
    assert any("/-/pi-memory/read?" in url for url in seen) and any("/history/" in url for url in seen)
    assert len(seen) > 60


@pytest.mark.asyncio
async def test_a_session_page_named_by_a_short_id_or_prefix_redirects_to_its_full_id(corpus):
    copied, locations, conn = corpus
    sid = session_id(copied, "rich")
    short = short_ids(conn, [sid])[sid]
    async with running(make_datasette(locations)) as ds:
        for name in (short, sid[:13]):
            response = await ds.client.get(f"/-/pi-memory/sessions/{name}?offset=0", actor=ROOT)
            assert response.status_code == 302
            assert response.headers["location"] == f"/-/pi-memory/sessions/{sid}?offset=0"
        assert (await ds.client.get(f"/-/pi-memory/sessions/{sid}", actor=ROOT)).status_code == 200
        shared = await ds.client.get(f"/-/pi-memory/sessions/{sid[:8]}", actor=ROOT)
        unknown = await ds.client.get("/-/pi-memory/sessions/ffffffff", actor=ROOT)
        anonymous = await ds.client.get(f"/-/pi-memory/sessions/{short}")
    assert shared.status_code == 400 and "names several sessions" in shared.text and short in shared.text
    assert unknown.status_code == 404
    assert anonymous.status_code == 403 and sid not in anonymous.text, "no redirect reveals a session to a stranger"
