"""The search and read pages ask through the API's request path (`api.call`): the same request gets the same
hits and a bad argument the same message; what they mark is the reply's terms, never the query cut again."""

from __future__ import annotations

import html
import re

import pytest
from support.plugin_world import ROOT, api_path

from pimem_index.search import request


def hit_ids(page: str) -> list[str]:
    """The entries a search page lists, in order (each hit's read link)."""
    return re.findall(r'read\?id=([^&"]+)', page)


def page_error(page: str) -> str:
    found = re.search(r'<p class="pi-memory-error">(.*?)</p>', page, re.S)
    assert found, page[:500]
    return html.unescape(found.group(1))


@pytest.mark.asyncio
async def test_the_search_page_and_the_api_answer_the_same_request_with_the_same_hits(ds, world):
    params = {"q": "heron", "scope": "project", "cwd": world["cwd_a"], "limit": "20"}
    api = await ds.client.get(api_path("search", world, **params), actor=ROOT)
    page = await ds.client.get("/-/pi-memory/search", params=params, actor=ROOT)
    assert api.status_code == page.status_code == 200
    found = [hit["id"] for hit in api.json()["results"]]
    assert len(found) > 1 and hit_ids(page.text) == found
    assert world["other"] not in hit_ids(page.text), "the other project's entry, on neither"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "bad",
    [{"scope": "project"}, {"around": "99"}, {"offset": "-1"}, {"scope": "everywhere"}],
    ids=["project-without-cwd", "around", "offset", "scope"],
)
async def test_the_read_page_and_the_api_refuse_a_bad_argument_with_the_same_message(ds, world, bad):
    params = {"id": world["ids"]["user"], "scope": "global", **bad}
    api = await ds.client.get("/-/pi-memory/api/read", params=params, actor=ROOT)
    page = await ds.client.get("/-/pi-memory/read", params=params, actor=ROOT)
    assert api.status_code == page.status_code == 400, (api.text, page.text[:300])
    assert page_error(page.text) == api.json()["error"]
    assert "heron" not in page.text.lower().split("<h1>")[1], "no entry shown under the error"


@pytest.mark.asyncio
async def test_the_pages_mark_the_reply_s_terms_and_never_cut_the_query_again(ds, world, monkeypatch):
    class FirstCutOnly:
        """The query tokeniser as it cut the query for the request; cut again, it would find no word."""

        def __init__(self) -> None:
            self.cuts = 0

        def findall(self, text: str) -> list[str]:
            self.cuts += 1
            return re.findall(r"[^\W_]+", text) if self.cuts == 1 else []

    for path, params in [
        ("/-/pi-memory/search", {"q": "Heron", "scope": "global"}),
        ("/-/pi-memory/read", {"id": world["ids"]["user"], "scope": "global", "q": "Heron"}),
    ]:
        cut = FirstCutOnly()
        monkeypatch.setattr(request, "_TERM", cut)
        page = await ds.client.get(path, params=params, actor=ROOT)
        assert page.status_code == 200, page.text[:300]
        assert "<mark>heron</mark>" in page.text, path
        assert cut.cuts == 1, f"{path}: the query was cut into words once, by its request"
