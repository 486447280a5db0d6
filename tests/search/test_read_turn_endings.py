"""A read of an assistant turn that was aborted (or failed) says how it ended, as the session page does:
`[aborted: Request was aborted.]`, never empty text; a turn that ended normally reads as its text alone."""

from __future__ import annotations

import json

from click.testing import CliRunner
from support.real_pi_index import indexed_corpus

from pimem_index.cli import cli
from pimem_index.search import query


def assistant_turns(world, role: str, stop_reason: str | None) -> list[str]:
    """Entry ids of the assistant turns of that journal with that stop reason."""
    return [
        entry_id
        for (entry_id,) in world.conn.execute(
            "SELECT id FROM entries WHERE session_id = ? AND kind = 'assistant' AND stop_reason IS ? ORDER BY rowid",
            (world.session(role), stop_reason),
        )
    ]


def test_a_read_of_an_aborted_turn_says_it_was_aborted_and_why(tmp_path, monkeypatch):
    world = indexed_corpus(tmp_path, monkeypatch)
    session = world.session("aborted")
    aborted = assistant_turns(world, "aborted", "aborted")
    assert len(aborted) == 2  # aborted while streaming, and while a bash call ran
    for entry_id in aborted:
        reply = query.read(world.conn, world.locations, entry_id, session_id=session, scope="global")
        assert reply["status"] == "ok" and reply["text"] == "[aborted: Request was aborted.]"
        assert reply["total_chars"] == len(reply["text"])
    answered = assistant_turns(world, "aborted", "stop")
    assert answered
    normal = query.read(world.conn, world.locations, answered[0], session_id=session, scope="global")
    assert normal["text"] and "[aborted" not in normal["text"] and "[stop" not in normal["text"]
    cli_reply = CliRunner().invoke(cli, ["read", aborted[0], "--session", session, "--scope", "global", "--json"])
    assert json.loads(cli_reply.output)["text"] == "[aborted: Request was aborted.]"
    words = CliRunner().invoke(cli, ["read", aborted[0], "--session", session, "--scope", "global"])
    assert "[aborted: Request was aborted.]" in words.output
    world.conn.close()
