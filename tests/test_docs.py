"""The docs match the code: generated parts are current, and every command, option, route, reply
key and kind of secret the code has is documented (the sqlite-utils test_docs habit).

Regenerate the generated parts with: .venv/bin/cog -r docs/cli.md docs/redaction.md
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from urllib.parse import urlencode

import click
import pytest
import pytest_asyncio
from datasette_test import Datasette

from datasette_pi_memory import views
from datasette_pi_memory.state import PLUGIN
from pimem_index.index.indexer import index_all
from pimem_index.redaction.table import KINDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GENERATED = ("docs/cli.md", "docs/redaction.md", "docs/api.md")


def pimem_group() -> click.Command:
    """The `pimem` command as the console script builds it, commands added by plugins included."""
    return entry_points(group="console_scripts")["pimem"].load()


# ---- generated parts --------------------------------------------------------------------------


@pytest.mark.parametrize("page", GENERATED)
def test_the_generated_parts_of_the_page_match_the_code(page):
    assert "[[[cog" in (ROOT / page).read_text()  # generated, not copied by hand
    result = subprocess.run([sys.executable, "-m", "cogapp", "--check", page], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, (
        f"{page} is out of date; run: .venv/bin/cog -r {page}\n{result.stdout}{result.stderr}"
    )


# ---- docs/cli.md: every command and option ----------------------------------------------------


def walk(command: click.Command, path: tuple[str, ...] = ()):
    """(path, command) for the command and every visible command under it, as the group has them now."""
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name="pimem")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, (*path, name))


def sections(markdown: str) -> dict[str, str]:
    """Heading text -> the text under it up to the next heading of any level (code blocks skipped)."""
    found: dict[str, str] = {}
    current, fenced = None, False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"#+ (.+)$", line)
        if heading:
            current = heading.group(1).replace("`", "").strip()
            found[current] = ""
        elif current is not None:
            found[current] += line + "\n"
    return found


def undocumented(group: click.Command, markdown: str) -> list[str]:
    """What the page lacks: a section per command holding its --help, and every visible option."""
    problems = []
    pages = sections(markdown)
    for path, command in walk(group):
        name = " ".join(("pimem", *path))
        text = pages.get(name)
        if text is None:
            problems.append(f"no section '## {name}'")
            continue
        usages = re.findall(r"^Usage: (pimem(?: [\w-]+)*) ", text, re.M)
        if usages != [name]:
            problems.append(f"section '{name}' holds the --help of {usages or 'no command'}")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                problems += [
                    f"option {opt} of {name} is not in its section"
                    for opt in (*param.opts, *param.secondary_opts)
                    if opt not in text
                ]
    return problems


def test_every_command_and_option_of_pimem_has_its_section_in_the_cli_page():
    group = pimem_group()
    paths = [" ".join(path) for path, _command in walk(group)]
    assert {"index", "search", "read", "serve", "pi install"} <= set(paths)
    assert undocumented(group, (DOCS / "cli.md").read_text()) == []


def test_a_command_or_option_missing_from_the_cli_page_is_reported():
    group = click.Group("pimem")

    @group.command(name="index")
    @click.option("--json", is_flag=True)
    @click.option("--brand-new", is_flag=True)
    def index_cmd(json, brand_new):
        """Index."""

    @group.command(name="novel")
    def novel():
        """Not in the docs."""

    @group.command(name="quiet", hidden=True)
    def quiet():
        """Hidden: never listed, so not required."""

    problems = undocumented(group, (DOCS / "cli.md").read_text())
    assert "option --brand-new of pimem index is not in its section" in problems
    assert "no section '## pimem novel'" in problems
    assert not [p for p in problems if "--json" in p or "quiet" in p]


def test_a_section_holding_another_commands_help_is_reported():
    group = click.Group("pimem")
    group.command(name="index")(lambda: None)
    page = (
        "## pimem\n\n```text\nUsage: pimem [OPTIONS]\n```\n\n"
        "## pimem index\n\n```text\nUsage: pimem {command} [OPTIONS]\n```\n"
    )
    assert undocumented(group, page.format(command="search")) == [
        "section 'pimem index' holds the --help of ['pimem search']"
    ]
    assert undocumented(group, page.format(command="index")) == []


# ---- docs/redaction.md: every kind of secret --------------------------------------------------


def test_every_kind_of_secret_the_code_masks_is_in_the_redaction_page_and_no_other():
    page = (DOCS / "redaction.md").read_text()
    documented = re.findall(r"^\| `(\w+)` \|", page, re.M)
    assert set(KINDS) - set(documented) == set()
    assert set(documented) - set(KINDS) == set()  # a kind the code dropped is not still listed
    for kind, description in KINDS.items():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{kind}` |"))
        assert re.sub(r"\\(.)", r"\1", row).endswith(f"| {description} |")


# ---- the README links every docs page ---------------------------------------------------------


def test_the_readme_links_every_docs_page_and_only_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]*)?\)", readme))
    assert {p.name for p in DOCS.glob("*.md")} - linked == set()
    assert {name for name in linked if not (DOCS / name).is_file()} == set()


# ---- docs/api.md: every route and every key of a real reply -----------------------------------


def route_paths(pattern: str) -> list[str]:
    """The paths a route pattern accepts, its named alternatives expanded; [] for a catch-all."""
    body = pattern.removeprefix("^").removesuffix("$")
    choice = re.search(r"\(\?P<\w+>([\w|-]+)\)", body)
    if choice:
        return [
            p
            for alt in choice.group(1).split("|")
            for p in route_paths(body[: choice.start()] + alt + body[choice.end() :])
        ]
    return [body] if re.fullmatch(r"[\w/-]+", body) else []


def api_routes() -> list[str]:
    return [
        path
        for pattern, _view in views.ROUTES
        if pattern.startswith("^/-/pi-memory/api")
        for path in route_paths(pattern)
    ]


def test_every_api_route_is_in_the_api_page_and_no_other():
    page = (DOCS / "api.md").read_text()
    routes = api_routes()
    assert "/-/pi-memory/api/search" in routes and "/-/pi-memory/api/status" in routes
    assert [r for r in routes if f"`GET {r}`" not in page] == []
    documented = set(re.findall(r"`GET (/-/pi-memory/api/[\w-]+)`", page))
    assert documented - set(routes) == set()  # a route the plugin no longer has is not still listed


def json_keys(value) -> set[str]:
    """Every key of every object in a JSON value, however deep; a `sessions` map's keys are session ids, not keys."""
    if isinstance(value, dict):
        keys = set(value) | {k for v in value.values() for k in json_keys(v)}
        if isinstance(value.get("sessions"), dict):
            keys -= set(value["sessions"])
        return keys
    if isinstance(value, list):
        return {k for v in value for k in json_keys(v)}
    return set()


def documented_keys(page: str) -> set[str]:
    """The keys of the JSON examples in the page (a fragment such as `"indexing": {...}` included)."""
    keys: set[str] = set()
    for block in re.findall(r"```json\n(.*?)```", page, re.S):
        try:
            value = json.loads(block)
        except ValueError:
            value = json.loads("{" + block + "}")
        keys |= json_keys(value)
    return keys


@pytest.fixture
def journals(locations, new_journal, sessions_dir, tmp_path):
    """A project with every kind of reply to give: an id in two sessions, an entry whose line changes
    after indexing, a summary, a journal deleted after indexing, a link outside, a journal that fails."""
    a = new_journal("Apps/prjct")
    ids = {"user": a.user("the redis timeout was 5s"), "tool": a.tool_result("bash", "redis.timeout = 30")}
    a.compaction("Summary: the redis timeout was raised", tokens_before=123456)
    a.assistant("Raised it.", model="claude-opus-4-5")  # usage figures for the usage and sessions replies
    b = new_journal("Apps/prjct")
    b.write_line(
        {
            "type": "message",
            "id": ids["user"],
            "parentId": None,
            "timestamp": "2026-03-15T22:40:25.500Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "the same id again"}]},
        }
    )
    gone = new_journal("Apps/prjct")
    ids["gone"] = gone.user("a redis note in a journal deleted later")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    os.symlink(outside, sessions_dir / "link.jsonl")
    unencodable = os.fsencode(sessions_dir) + b"/2026-03-15T22-40-18-123Z_\xff.jsonl"
    with open(unencodable, "wb") as fh:  # SQLite's TEXT cannot hold its path: the journal fails
        fh.write(
            b'{"type":"session","version":3,"id":"bytes","cwd":"/tmp/b"}\n'
            b'{"type":"message","id":"byte0001","message":{"role":"user","content":"osprey"}}\n'
        )
    return {"a": a, "gone": gone, "ids": ids, "cwd": a.cwd}


@pytest_asyncio.fixture
async def ds(locations, conn, journals):
    datasette = Datasette([str(locations.db_path)], plugin_config={PLUGIN: {"background_index": False}})
    datasette.root_enabled = True
    await datasette.invoke_startup()
    yield datasette
    await datasette.invoke_shutdown()


async def api_reply(ds, action: str, **params) -> dict:
    response = await ds.client.get(f"/-/pi-memory/api/{action}?{urlencode(params, doseq=True)}", actor={"id": "root"})
    return response.json()


async def real_replies(ds, conn, locations, journals) -> list[dict]:
    """One reply of every shape the API gives, from a real Datasette over a real index."""
    cwd, ids, a = journals["cwd"], journals["ids"], journals["a"]
    replies = [await api_reply(ds, "search", q="redis", journal=str(a.path))]  # backfill not done: a note
    assert "note" in replies[0]["indexing"]
    index_all(conn, locations)
    journals["gone"].path.unlink()
    text = a.path.read_bytes()
    a.path.write_bytes(text.replace(b"redis.timeout = 30", b"redis.timeout = 31"))  # the line changed
    replies += [
        await api_reply(ds, "search", q="redis timeout", cwd=cwd),
        await api_reply(ds, "search", q="redis walrus", cwd=cwd),
        await api_reply(ds, "search", q='"redis timeout"', cwd=cwd),
        await api_reply(ds, "summaries", cwd=cwd),
        await api_reply(ds, "read", id=ids["user"], cwd=cwd),
        await api_reply(ds, "read", id=ids["user"], cwd=cwd, session_id=a.session_id),
        await api_reply(ds, "read", id=ids["tool"], cwd=cwd),
        await api_reply(ds, "read", id="nope", cwd=cwd),
        await api_reply(ds, "status"),
        await api_reply(ds, "usage", by="model"),
        await api_reply(ds, "sessions", cwd=cwd),
        await api_reply(ds, "search", q="redis", since="yesterday", cwd=cwd),
        await api_reply(ds, "nope"),
    ]
    return replies


@pytest.mark.asyncio
async def test_every_key_of_a_real_api_reply_is_in_the_api_page_and_no_other(ds, conn, locations, journals):
    replies = await real_replies(ds, conn, locations, journals)
    statuses = {r.get("status") for r in replies}
    assert {"ok", "ambiguous", "unavailable", "not_found"} <= statuses
    assert any(r.get("match") == "any" for r in replies) and any(r.get("error") for r in replies)
    assert any(hit.get("stale") for r in replies for hit in r.get("results", []))
    status = next(r for r in replies if "journals_failed" in r)
    assert status["journals_failed"] and status["journals_outside"]
    real = set().union(*(json_keys(r) for r in replies))
    documented = documented_keys((DOCS / "api.md").read_text())
    assert real - documented == set()
    assert documented - real == set()  # a key the replies no longer have is not still shown


def test_every_module_of_both_packages_is_in_the_design_page():
    design = (DOCS / "design.md").read_text()
    for package in ("pimem_index", "datasette_pi_memory"):
        root = DOCS.parent / package
        modules = {
            ".".join(p.relative_to(root).with_suffix("").parts)
            for p in root.rglob("*.py")
            if not p.stem.startswith("_") and "node_modules" not in p.parts
        }
        assert modules, package
        missing = {m for m in modules if f"`{m}`" not in design and f"`{m.rsplit('.', 1)[-1]}`" not in design}
        assert missing == set(), f"{package} modules missing from docs/design.md: {sorted(missing)}"
