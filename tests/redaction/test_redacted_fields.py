"""Every field we show is redacted (issue 15, part 4).

Besides an entry's text, the index stores journal strings that pages, the API and Datasette's
tables show: a session's name (session_info), tool names (toolCall names, toolName) and
customType. Each is redacted where it enters the index, and a session's title (its name or its
first user message) is redacted as the whole message would be. Paths and cwds are identifiers and
stay as they are. Tokens are built at test time from random characters.
"""

from __future__ import annotations

import random
import string
from urllib.parse import urlencode

import pytest
import pytest_asyncio
from support.indexed import vocab
from support.plugin_world import ROOT, make_datasette, running

from pimem_index.index import indexer

RNG = random.Random(1515)
ALNUM = string.ascii_letters + string.digits
GH = "gh" + "p_"
MASKED = GH + "[REDACTED]"


def github_token() -> tuple[str, str]:
    """(the token, its part that must never show)."""
    body = "".join(RNG.choice(ALNUM) for _ in range(36))
    return GH + body, body


@pytest.fixture
def fields_world(conn, locations, new_journal):
    """A session whose name, tool names and customType carry tokens, and an ordinary one, indexed."""
    name_token, name_body = github_token()
    tool_token, tool_body = github_token()
    type_token, type_body = github_token()
    secret = new_journal("Apps/prjct")
    secret.session_info(f"deploy with {name_token}")
    secret.user("zebrafinch please deploy")
    secret.assistant("running it", tool_calls=[(tool_token, {"target": "prod"})])
    result_id = secret.tool_result(tool_token, "zebrafinch deployed")
    secret.hook_message(type_token, "zebrafinch hook says hello")
    secret.custom_message(type_token, "zebrafinch custom message")
    ordinary = new_journal("Apps/prjct")
    ordinary.session_info("Ordinary wombat work")
    ordinary.user("zebrafinch ordinary question")
    ordinary.assistant("looking", tool_calls=[("bash", {"command": "ls"})])
    ordinary.hook_message("note-hook", "zebrafinch ordinary hook")
    indexer.index_all(conn, locations)
    return {
        "secret": secret,
        "ordinary": ordinary,
        "result_id": result_id,
        "bodies": (name_body, tool_body, type_body),
    }


@pytest_asyncio.fixture
async def ds(locations, fields_world):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


def leaks(shown: dict[str, str], bodies) -> list[str]:
    """The views that show any of the secrets."""
    return [view for view, text in shown.items() if any(body in text for body in bodies)]


async def pages(ds, *paths: str) -> dict[str, str]:
    out = {}
    for path in paths:
        res = await ds.client.get(path, actor=ROOT)
        assert res.status_code == 200, path
        out[path] = res.text
    return out


@pytest.mark.asyncio
async def test_a_session_name_holding_a_secret_is_shown_masked_everywhere(ds, conn, fields_world):
    secret, ordinary = fields_world["secret"], fields_world["ordinary"]
    shown = await pages(
        ds,
        "/history/files",
        "/history/files.json?_shape=array",
        "/history/sessions",
        "/history/sessions.json?_shape=array",
        "/-/pi-memory",
        f"/-/pi-memory/sessions/{secret.session_id}",
    )
    shown["files.name"] = " ".join(name or "" for (name,) in conn.execute("SELECT name FROM files"))
    assert leaks(shown, fields_world["bodies"]) == []
    assert [view for view, text in shown.items() if f"deploy with {MASKED}" not in text] == []
    ordinary_views = {view: text for view, text in shown.items() if "/sessions/" not in view}
    ordinary_views |= await pages(ds, f"/-/pi-memory/sessions/{ordinary.session_id}")
    assert [view for view, text in ordinary_views.items() if "Ordinary wombat work" not in text] == []


@pytest.mark.asyncio
async def test_tool_names_and_custom_types_holding_a_secret_are_shown_masked_everywhere(ds, conn, fields_world):
    secret = fields_world["secret"]
    search = "/-/pi-memory/api/search?" + urlencode({"q": "zebrafinch", "cwd": secret.cwd, "limit": 20})
    read = "/-/pi-memory/api/read?" + urlencode({"id": fields_world["result_id"], "cwd": secret.cwd})
    shown = await pages(
        ds,
        "/history/entries",
        "/history/entries.json?_shape=array",
        f"/-/pi-memory/sessions/{secret.session_id}",
        search,
        read,
        "/-/pi-memory/search?" + urlencode({"q": "zebrafinch", "cwd": secret.cwd}),
    )
    shown["entries.tool"] = " ".join(tool or "" for (tool,) in conn.execute("SELECT tool FROM entries"))
    assert leaks(shown, fields_world["bodies"]) == []
    assert [view for view, text in shown.items() if MASKED not in text] == []
    tools = {hit["tool"] for hit in (await ds.client.get(search, actor=ROOT)).json()["results"]}
    assert {MASKED, "note-hook"} <= tools, "an ordinary customType is shown unchanged"
    assert "bash" in shown["entries.tool"].split()


def test_no_secret_in_a_field_is_a_search_term(conn, fields_world):
    terms = vocab(conn)
    assert "zebrafinch" in terms and "wombat" not in terms  # names are not indexed at all
    assert [body for body in fields_world["bodies"] if body.lower() in terms] == []


@pytest.mark.asyncio
async def test_a_title_from_the_first_user_message_is_redacted_as_the_whole_message(ds, conn, locations, new_journal):
    first = "M" + "".join(RNG.choice(ALNUM) for _ in range(23))
    rest = "".join(RNG.choice(ALNUM) for _ in range(6)) + "." + "".join(RNG.choice(ALNUM) for _ in range(38))
    untitled = new_journal("Apps/prjct")
    line = "nothing secret on this line\n"
    untitled.user(f"quokka bot {first}.{rest}\n" + line * 4000 + "the discord client reads it\n")
    plain = new_journal("Apps/prjct")
    plain.user("quokka plain question about the build")
    indexer.index_all(conn, locations)
    overview = (await ds.client.get("/-/pi-memory", actor=ROOT)).text
    assert rest not in overview and f"quokka bot {first}.[REDACTED]" in overview
    assert "quokka plain question about the build" in overview
