"""One answer for one text, wherever it is shown (issue 15, part 3).

A secret whose recognition depends on context (a word anywhere in the entry, a .netrc line
before it) is masked in every view of a long entry or in none: the search excerpt, every
page of a read, the session page, the render hook on the entries table and row page, and the
term index. Each view redacts a different part of the text (a window, a head, slices); none
may decide differently from the whole text. Tokens are built at test time from random characters.
"""

from __future__ import annotations

import itertools
import random
import string
from urllib.parse import urlencode

import pytest
import pytest_asyncio
from support.indexed import vocab
from support.plugin_world import ROOT, make_datasette, running

from pimem_index.index import indexer
from pimem_index.redaction.driver import MASK, SLICE_CHARS, context_of, redact, redact_part

RNG = random.Random(15)
ALNUM = string.ascii_letters + string.digits


def rand(n: int) -> str:
    return "".join(RNG.choice(ALNUM) for _ in range(n))


def filler(chars: int) -> str:
    """Ordinary ASCII output lines, about `chars` characters."""
    line = "ordinary output line, nothing secret here at all\n"
    return line * (chars // len(line) + 1)


class Secret:
    """A token as written, the part that must never show, and the form every view shows instead."""

    def __init__(self, written: str, hidden: str, masked: str):
        self.written, self.hidden, self.masked = written, hidden, masked


def discord_token() -> Secret:
    first, rest = "M" + rand(23), rand(6) + "." + rand(38)
    return Secret(first + "." + rest, rest, first + "." + MASK)


def telegram_token() -> Secret:
    bot, rest = "".join(RNG.choice(string.digits) for _ in range(9)), "AA" + rand(33)
    return Secret(bot + ":" + rest, rest, bot + ":" + MASK)


def netrc_password() -> Secret:
    value = rand(20)
    return Secret(value, value, "password " + MASK)


def far_context(secret: Secret, word: str) -> str:
    """The token in the first line, the word that makes it a secret 100 KB later (250 KB in all)."""
    return f"zebrafinch bot {secret.written}\n" + filler(100_000) + f"the {word} client reads it\n" + filler(150_000)


def over_a_megabyte(secret: Secret) -> str:
    """A Discord token at the start of a 1.3 MB text that mentions discord only at its end."""
    return f"zebrafinch bot {secret.written}\n" + filler(1_300_000) + "the discord client reads it\n"


def netrc_across_a_slice_cut(secret: Secret) -> str:
    """.netrc lines whose password line is the first of the second slice of a large text."""
    machine = "machine example.com\nlogin deploy"
    head = filler(SLICE_CHARS - 4000)
    head += "y" * (SLICE_CHARS - len(head) - len(machine) - 1) + "\n"
    text = head + machine + "\n" + f"password {secret.written}\nzebrafinch notes\n" + filler(50_000)
    assert text.index("\nlogin deploy\n") + len("\nlogin deploy") == SLICE_CHARS  # the cut follows login
    return text


SCENARIOS = {
    # name: (make the secret, make the text, does the head of the entry (pages, previews) show it)
    "discord word 100 KB away": (discord_token, lambda s: far_context(s, "discord"), True),
    "telegram word 100 KB away": (telegram_token, lambda s: far_context(s, "telegram"), True),
    "discord word in another megabyte": (discord_token, over_a_megabyte, True),
    "netrc across a slice cut": (netrc_password, netrc_across_a_slice_cut, False),
}


@pytest_asyncio.fixture
async def ds(locations, conn):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


async def every_view(ds, conn, journal, entry_id: str) -> dict[str, str]:
    """What each view shows of one entry, by view."""
    shown = {}
    search = await ds.client.get(
        "/-/pi-memory/api/search?" + urlencode({"q": "zebrafinch", "cwd": journal.cwd}), actor=ROOT
    )
    shown["search excerpt"] = " ".join(h["excerpt"] for h in search.json()["results"] if h["id"] == entry_id)
    pages, offset = [], 0
    while offset is not None:
        params = {"id": entry_id, "cwd": journal.cwd, "offset": offset}
        page = (await ds.client.get("/-/pi-memory/api/read?" + urlencode(params), actor=ROOT)).json()
        pages.append(page["text"])
        offset = page["next_offset"]
    shown["read, every page"] = "".join(pages)
    shown["session page"] = (await ds.client.get(f"/-/pi-memory/sessions/{journal.session_id}", actor=ROOT)).text
    shown["entries table"] = (await ds.client.get("/history/entries", actor=ROOT)).text
    rowid = conn.execute("SELECT rowid FROM entries WHERE id = ?", (entry_id,)).fetchone()[0]
    shown["row page"] = (await ds.client.get(f"/history/entries/{rowid}", actor=ROOT)).text
    return shown


@pytest.mark.asyncio
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_a_context_dependent_secret_is_masked_in_every_view(ds, conn, locations, new_journal, scenario):
    make_secret, make_text, in_head = SCENARIOS[scenario]
    secret = make_secret()
    journal = new_journal()
    entry_id = journal.tool_result("bash", make_text(secret))
    indexer.index_all(conn, locations)

    shown = await every_view(ds, conn, journal, entry_id)
    assert [view for view, text in shown.items() if secret.hidden in text] == []
    assert "zebrafinch" in shown["search excerpt"]
    showing = ("search excerpt", "read, every page") + (
        ("session page", "entries table", "row page") if in_head else ()
    )
    assert [view for view in showing if secret.masked not in shown[view]] == []
    terms = vocab(conn)
    assert "zebrafinch" in terms
    assert not [part for part in secret.hidden.replace(".", " ").split() if part.lower() in terms]


# ---- the library: parts of an entry ---------------------------------------------------------


def test_an_entry_redacted_piece_by_piece_reads_as_the_entry_redacted_whole():
    tokens = [discord_token(), telegram_token(), netrc_password()]
    text = far_context(tokens[0], "discord") + far_context(tokens[1], "telegram")
    text += netrc_across_a_slice_cut(tokens[2])
    context = context_of(text)
    cuts = [0] + [text.index("\n", k) + 1 for k in range(7_000, len(text), 90_001)] + [len(text)]
    pieces = "".join(redact_part(text, a, b, context) for a, b in itertools.pairwise(cuts))
    whole = redact(text)
    assert pieces == whole
    assert all(t.masked in whole and t.hidden not in whole for t in tokens)


def test_a_part_without_the_word_is_masked_with_its_entrys_context_only():
    token = discord_token()
    part = f"bot {token.written}\n"
    whole = part + filler(100_000) + "the Discord client\n"
    assert redact(part, context=context_of(whole)) == f"bot {token.masked}\n"
    assert redact(part) == part, "a text that is the whole entry and never mentions discord keeps it"
    assert redact_part(whole, 0, len(part)) == f"bot {token.masked}\n"


def test_a_part_cut_inside_a_secret_masks_the_piece_it_holds():
    token = discord_token()
    text = filler(300_000) + f"discord bot {token.written} end\n" + filler(300_000)
    inside = text.index(token.hidden) + 10
    assert redact_part(text, 0, inside).endswith("." + MASK)
    assert redact_part(text, inside, inside + 40).startswith(MASK + " end")
