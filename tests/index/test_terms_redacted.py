"""The term index gives the same answer as the whole entry redacted (issue 27, class 8).

An entry's terms are those of its whole text redacted, whatever its size and wherever the word that
makes a token a secret stands: a Discord bot token is a secret in an entry that mentions discord
anywhere, so a bash result of half a megabyte that says "discord bot" at its start and holds a
token 264 KB further down (or says it only at its end, or runs past the size redaction slices at)
must not give the token's masked parts as terms. Indexed through `pimem index`, looked for in the
term index (fts5vocab) and with `pimem search`. Tokens are built at test time from random characters;
their first part is not the base64 of a numeric id, so only the context word makes them secrets.
"""

from __future__ import annotations

import json
import random
import string

import pytest
from support.indexed import vocab

from pimem_index import db, store
from pimem_index.index.parsing import failure_reason
from pimem_index.redaction import redact

RNG = random.Random(2708)
ALNUM = string.ascii_letters + string.digits
FILLER = "quiet filler line of an ordinary build log\n"


def discord_token() -> tuple[str, list[str]]:
    """(a Discord-shaped bot token, the parts of it redaction masks)."""
    first = "M" + "".join(RNG.choice(ALNUM) for _ in range(23))
    second = "".join(RNG.choice(ALNUM) for _ in range(6))
    third = "".join(RNG.choice(ALNUM) for _ in range(38))
    return f"{first}.{second}.{third}", [second, third]


def filler(kib: int) -> str:
    return FILLER * (kib * 1024 // len(FILLER))


def terms_of(text: str) -> set[str]:
    """The terms FTS5 makes of `text` with the index's own options."""
    conn = db.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, {store.FTS_OPTIONS})")
    conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, row)")
    return {term for (term,) in conn.execute("SELECT term FROM v")}


# (context before the token, KiB between, context after): the case, the word only at the
# end, and an entry past the size redaction works in slices at (1 MiB)
PLACEMENTS = {
    "discord_bot_at_the_start_530_kb": ("discord bot started\n", 264, "the end of the log\n"),
    "discord_only_at_the_end_530_kb": ("bot started\n", 264, "it was the discord bot\n"),
    "discord_at_the_start_of_2_6_mb": ("discord bot started\n", 1300, "the end of the log\n"),
}


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_a_token_masked_in_the_whole_entry_is_no_term_whatever_the_entry_size(run, conn, new_journal, home, placement):
    before, kib, after = PLACEMENTS[placement]
    token, secret_parts = discord_token()
    text = before + filler(kib) + f"bot token {token} pelicanword\n" + filler(kib) + after
    journal = new_journal("Apps/prjct")
    journal.user("why does the bot fail")
    journal.assistant("Reading the log.", tool_calls=[("bash", {"command": "cat bot.log"})])
    journal.tool_result("bash", text, call_id=journal.call_ids[0])
    (home / "Apps" / "prjct").mkdir(parents=True, exist_ok=True)

    result = run("index", "--json")
    assert result.exit_code == 0, result.output

    terms = set(vocab(conn))
    assert [part for part in secret_parts if part.lower() in terms] == []
    whole = terms_of(redact(text))
    assert {"pelicanword", "redacted"} <= whole <= terms, "the entry's terms are its whole text's, redacted"
    for part in secret_parts:
        found = json.loads(run("search", part, "--cwd", journal.cwd, "--json").output)
        assert found["results"] == [], part
    near = json.loads(run("search", "pelicanword", "--cwd", journal.cwd, "--json").output)
    assert [hit["kind"] for hit in near["results"]] == ["tool_result"]
    assert not any(part in near["results"][0]["excerpt"] for part in secret_parts)


def test_a_failure_reason_is_redacted_before_it_is_cut():
    token = "gh" + "p_" + "".join(RNG.choice(ALNUM) for _ in range(36))
    reason = failure_reason(OSError("cannot read " + "x" * 170 + " " + token + " and more"))
    assert token[4:8] not in reason
    assert reason.startswith("OSError: cannot read xxx") and len(reason) <= 200
