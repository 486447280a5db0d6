"""The `pimem` command: index, search and read Pi's session journals.

Commands that need more than the library (`serve`, `token` and `pi`, which need Datasette) come
from packages registered under the `pimem_index.commands` entry-point group, loaded only when a
command is not found here or the command list is shown, so this package never imports them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any

import click
import orjson

from pimem_index import __version__, db, journal, store
from pimem_index.errors import Arg, UserError
from pimem_index.humanize import counted, duration
from pimem_index.index import indexer, lease, parsing, workers
from pimem_index.locations import Locations, checked_journal, discover, refreshed, resolve
from pimem_index.manage import folders, forget
from pimem_index.manage import status as index_status
from pimem_index.search import query, wordforms
from pimem_index.search import scope as scopes
from pimem_index.search.request import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MAX_TERMS,
    SESSION_SORTS,
    USAGE_BY,
    ReadRequest,
    SearchRequest,
    SessionsRequest,
    UsageRequest,
)
from pimem_index.session import activity

COMMAND_PLUGINS = "pimem_index.commands"  # entry points: a function that adds commands to the pimem group


class Group(click.Group):
    """Turns user errors and SQLite trouble into one line on stderr and exit status 1, and adds the
    commands of command plugins the first time a command is not found or the list is shown."""

    plugins_loaded: bool = False

    def list_commands(self, ctx):
        self.load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        if command is None and not self.plugins_loaded:
            self.load_plugins()
            command = super().get_command(ctx, cmd_name)
        return command

    def load_plugins(self) -> None:
        """Call each `pimem_index.commands` entry point with this group, once; a plugin that fails
        costs its own commands and one line on stderr, never the library's commands."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        for plugin in entry_points(group=COMMAND_PLUGINS):
            try:
                plugin.load()(self)
            except Exception as e:
                click.echo(
                    f"pimem: skipped the commands of plugin {plugin.name} ({plugin.value}): {type(e).__name__}: {e}",
                    err=True,
                )

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as e:
            raise click.ClickException(e.for_cli()) from None
        except db.DatabaseError as e:
            raise click.ClickException(db.describe_error(e, ctx.meta.get(DB_PATH_KEY))) from None
        except workers.ParserStopped as e:
            raise click.ClickException(str(e)) from None
        except KeyboardInterrupt:
            click.echo("\nInterrupted: everything indexed so far is kept; run the command again to go on.", err=True)
            ctx.exit(130)


DB_PATH_KEY = "pimem.db_path"  # in click's shared ctx.meta: the index the command uses, for error messages


def common(fn):
    """--db and --sessions-dir, accepted by every command."""

    @click.option(
        "--db",
        "db_path",
        metavar="PATH",
        envvar="PIMEM_DB",
        help="Index file [default: <agent folder>/pi-memory/history.sqlite; env PIMEM_DB]",
    )
    @click.option(
        "--sessions-dir",
        "sessions_dirs",
        metavar="DIR",
        multiple=True,
        type=click.Path(file_okay=False),
        help="Another folder of journals, for this command only (repeatable; env PIMEM_SESSIONS_DIRS; "
        "for every command: pimem folders add DIR)",
    )
    @functools.wraps(fn)
    def wrapper(db_path, sessions_dirs, **kwargs):
        locations = resolve(db_path, sessions_dirs)
        click.get_current_context().meta[DB_PATH_KEY] = locations.db_path
        return fn(locations, **kwargs)

    return wrapper


def emit_json(data) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


@click.group(cls=Group)
@click.version_option(__version__, prog_name="pimem")
def cli():
    """Search and read Pi's session journals through a disposable index.

    The journals stay the only copy of the text: the index holds metadata, a byte
    pointer per journal line and redacted search terms.
    """


@cli.command(name="index")
@click.argument("journals", nargs=-1, type=click.Path(dir_okay=False))
@common
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON")
@click.option("--watch", is_flag=True, help="Keep indexing new lines until interrupted")
@click.option(
    "--interval", default=1.0, show_default=True, metavar="SECONDS", help="With --watch: pause between passes"
)
def index_cmd(locations: Locations, journals, as_json, watch, interval):
    """Index new journal lines: the given JOURNALS, else every journal, newest first.

    \b
    Examples:
        pimem index
        pimem index ~/.pi/agent/sessions/--home-u-app--/2026-03-15T22-40-18-123Z_0b6e.jsonl
    """
    for j in journals:
        if not os.path.isfile(j) and not _known(locations, j):
            raise UserError(f"no such journal: {j} (e.g. pimem index ~/.pi/agent/sessions/--home-u-app--/<file>.jsonl)")
        if os.path.isfile(j):
            _check_in_folders(locations, j)
        if os.path.isfile(j) and not os.access(j, os.R_OK):
            raise UserError(f"cannot read journal {j}: permission denied (check its owner and mode, e.g. chmod u+r)")
    conn = store.open_located(locations)
    if watch:
        _watch(conn, locations, [os.path.abspath(j) for j in journals] or None, interval)
        return
    show_bar = not as_json and sys.stderr.isatty()
    bar = None

    def progress(done, total, path):
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="Indexing journals", file=sys.stderr)
            bar.__enter__()
        bar.update(1)

    try:
        report = indexer.index_all(
            conn,
            locations,
            journals=[os.path.abspath(j) for j in journals] or None,
            progress=progress if show_bar else None,
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        emit_json(report.as_json())
        return
    if report.lease_holder:
        click.echo(
            f"Another indexer ({report.lease_holder}) is indexing every journal; "
            "nothing done. Name journals to index them now: pimem index FILE.jsonl",
            err=True,
        )
        return
    mb = report.bytes_read / 1e6
    click.echo(
        f"Indexed {counted(report.entries_added, 'entry', 'entries')} from {counted(report.files, 'journal')} "
        f"({mb:,.1f} MB) in {report.seconds:.1f}s"
    )
    if report.reindexed:
        click.echo(f"Reindexed from the start: {counted(report.reindexed, 'rewritten or shrunk journal')}")
    if report.removed:
        click.echo(f"Removed {counted(report.removed, 'deleted journal')} from the index")
    if report.malformed:
        click.echo(f"Skipped {counted(report.malformed, 'malformed line')}")
    if report.outside:
        click.echo(
            f"Skipped {counted(report.outside, 'link')} resolving outside the journal folders "
            "(not read; see: pimem status)"
        )
    if report.failed:
        click.echo(f"Could not index {counted(report.failed, 'journal')}; tried again later (pimem status says why)")


def _watch(conn, locations: Locations, journals, interval: float) -> None:
    """Incremental passes forever (into a new index file when the old one is deleted or replaced);
    exits quietly on Ctrl-C or SIGTERM."""
    import signal
    import time

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    owner = lease.default_owner()
    opened = store.file_id(locations.db_path)
    last_error = None
    try:
        while True:
            now = store.replaced(locations.db_path, opened)
            if now is not None:  # the index was deleted or replaced: write the one there now
                conn.close()
                conn, opened = store.open_index(locations.db_path), now
            locations = refreshed(locations)  # a folder recorded or removed since the last pass
            error = _watch_pass(conn, locations, journals, owner)
            if error is not None and error != last_error:
                click.echo(f"pimem index --watch: a pass stopped ({error}); trying again every {interval:g}s", err=True)
            last_error = error
            time.sleep(interval)
    except KeyboardInterrupt:
        pass


def _check_in_folders(locations: Locations, path: str) -> None:
    """Only a .jsonl journal inside the journal folders (after resolving links) is indexed:
    the same rule as the API's `journal=` (`locations.checked_journal`), never opening the file."""
    try:
        checked_journal(locations, os.path.abspath(path))
    except UserError:
        folders = ", ".join(str(d) for d in locations.sessions_dirs)
        raise UserError(
            f"{path} is not a .jsonl journal inside the journal folders ({folders}) "
            "(e.g. pimem index ~/.pi/agent/sessions/--home-u-app--/<file>.jsonl, "
            "or add its folder: pimem folders add DIR)"
        ) from None


def _watch_pass(conn, locations: Locations, journals, owner: str) -> str | None:
    """One pass of --watch; what stopped it, in one line, instead of raising it (so the loop, and
    the server that supervises it, go on: the next pass tries again). Ctrl-C and SIGTERM still stop."""
    try:
        report = indexer.index_all(conn, locations, journals=journals, owner=owner)
        if report.lease_holder and journals is None:
            newest = discover(locations)[:8]
            held = indexer.Failures(conn).held_back(newest)  # a failed journal waits here too
            indexer.index_all(conn, locations, journals=[p for p in newest if p not in held])
    except Exception as e:
        if conn.in_transaction:
            with contextlib.suppress(db.DatabaseError):
                conn.execute("ROLLBACK")
        return parsing.failure_reason(e)
    return None


def _known(locations: Locations, path: str) -> bool:
    """A deleted journal may still be named, so its rows can be removed."""
    if not locations.db_path.exists():
        return False
    conn = store.open_located(locations)
    return conn.execute("SELECT 1 FROM files WHERE path = ?", (os.path.abspath(path),)).fetchone() is not None


@cli.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON")
def status(locations: Locations, as_json):
    """What the index holds and how many journals wait to be indexed.

    \b
    Example:
        pimem status --json
    """
    conn = store.open_located(locations, create=False)
    data = index_status.status(conn, locations)
    if as_json:
        emit_json(data)
        return
    click.echo(f"Index:     {data['db']} ({data['db_bytes'] / 1e6:,.1f} MB, schema {data['schema_version']})")
    click.echo(f"Journals:  {data['journals_total']:,} found, {data['journals_pending']:,} waiting to be indexed")
    click.echo(f"Sessions:  {data['sessions']:,}")
    click.echo(f"Entries:   {data['entries']:,} ({data['summaries']:,} summaries)")
    click.echo(f"Indexed:   {data['indexed_bytes'] / 1e6:,.1f} MB of journal")
    for failed in data["journals_failed"]:
        click.echo(f"Failed:    {failed['path']}: {failed['reason']} ({_local_time(failed['at'])}; tried again later)")
    for folder in data["folders"]:
        click.echo(f"Folder:    {_folder_line(folder)}")
    for link in data["journals_outside"]:
        click.echo(f"Outside:   {link} (a link resolving outside the journal folders: not read)")


FOLDER_SOURCES = {
    "default": "the agent's own",
    "recorded": "recorded",
    "given": "this command only",
    "environment": "PIMEM_SESSIONS_DIRS",
}


def _folder_line(folder: Mapping[str, Any]) -> str:
    """A journal folder for people: its path, where it comes from, and whether it is missing."""
    missing = "" if folder["exists"] else ", missing"
    return f"{folder['path']} ({FOLDER_SOURCES.get(folder['source'], folder['source'])}{missing})"


@cli.group(name="folders")
def folders_group():
    """The journal folders every command and server reads: the agent's own, and those recorded here.

    Recorded folders live in <agent folder>/pi-memory/folders.json; `pimem serve --sessions-dir DIR`
    and `pimem pi install --sessions-dir DIR` record DIR too. --sessions-dir given to any other
    command adds a folder for that command only.

    \b
    Examples:
        pimem folders add ~/old-pi/sessions
        pimem folders list
        pimem folders remove ~/old-pi/sessions
    """


@folders_group.command(name="list")
@common
@click.option("--json", "as_json", is_flag=True, help="Print the folders as JSON")
def folders_list(locations: Locations, as_json):
    """List the journal folders and where each comes from.

    \b
    Example:
        pimem folders list
    """
    data = {"folders": folders.listing(locations)}
    if as_json:
        emit_json(data)
        return
    for folder in data["folders"]:
        click.echo(_folder_line(folder))


@folders_group.command(name="add")
@click.argument("dirs", nargs=-1, required=True, metavar="DIR...", type=click.Path(file_okay=False))
@common
def folders_add(locations: Locations, dirs):
    """Record folders of journals for every later command, the server and the Pi tool.

    \b
    Example:
        pimem folders add ~/old-pi/sessions
    """
    added = folders.add(locations, dirs)
    for path in added:
        click.echo(f"Recorded {path}; the next pass indexes its journals (pimem index, or a running server).")
    if not added:
        click.echo("Already journal folders: " + ", ".join(dirs))


@folders_group.command(name="remove")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
@common
def folders_remove(locations: Locations, folder):
    """Stop reading a recorded folder, and take its journals out of the index (never the journals).

    \b
    Example:
        pimem folders remove ~/old-pi/sessions
    """
    path, dropped = folders.remove(locations, folder)
    click.echo(f"Removed {path} from the journal folders; {counted(dropped, 'journal')} left the index.")


@cli.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON")
def rebuild(locations: Locations, as_json):
    """Build the index again from the journals and swap it in atomically.

    The new index is built beside the old one, which keeps answering until the new one
    replaces it in a single transaction; an interrupted rebuild leaves the old one intact.

    \b
    Example:
        pimem rebuild
    """
    report = indexer.rebuild(locations)
    if as_json:
        emit_json(report.as_json())
    else:
        click.echo(
            f"Rebuilt {locations.db_path}: {counted(report.entries_added, 'entry', 'entries')} from "
            f"{counted(report.files, 'journal')} in {report.seconds:.1f}s"
        )


@cli.command()
@common
@click.option("--confirm", is_flag=True, help="Delete exactly the journals of the last preview")
@click.option(
    "--current", metavar="JOURNAL", type=click.Path(dir_okay=False), help="The journal in use now: never a candidate"
)
@click.option("--json", "as_json", is_flag=True, help="Print the preview or the result as JSON")
def gc(locations: Locations, confirm, current, as_json):
    """Preview junk journals; with --confirm, delete the previewed ones that have not changed.

    A journal is junk when it never compacted and either ran under a temporary folder,
    received no user, team or extension message, or got two replies or fewer. Journals
    quiet for less than 24 hours, and --current, are never candidates.

    \b
    Examples:
        pimem gc
        pimem gc --confirm
    """
    from pimem_index.manage import junk

    conn = store.open_located(locations, create=False)
    if not confirm:
        data = junk.preview(conn, locations, current=current)
        if as_json:
            emit_json(data)
            return
        for c in data["candidates"]:
            click.echo(
                f"{c['path']}\n  {c['cwd'] or '?'}  started {_local_time(c['started'])}  "
                f"{c['size'] / 1e3:,.1f} kB  {counted(c['entries'], 'entry', 'entries')}  - {c['reason']}"
            )
        click.echo(
            f"{counted(data['total_files'], 'junk journal')}, {data['total_bytes'] / 1e6:,.2f} MB, "
            f"{counted(data['total_entries'], 'entry', 'entries')}."
        )
        if data["total_files"]:
            click.echo("Delete exactly these (unless they change) with: pimem gc --confirm")
        return
    data = junk.confirm(conn, locations)
    if as_json:
        emit_json(data)
        return
    for d in data["deleted"]:
        click.echo(f"{'Trashed' if d['removed'] == 'trash' else 'Deleted'} {d['path']}")
    for s_ in data["skipped"]:
        click.echo(f"Kept {s_['path']}: {s_['skipped']}")
    click.echo(f"{len(data['deleted'])} deleted ({data['deleted_bytes'] / 1e6:,.2f} MB), {len(data['skipped'])} kept.")


@cli.command(name="forget")
@click.argument("entry_id", required=False)
@common
@click.option("--session", "session_id", metavar="ID", help="The entry's session, or alone: the whole session")
@click.option("--list", "show_list", is_flag=True, help="Show what is forgotten")
@click.option("--json", "as_json", is_flag=True, help="Print JSON")
def forget_cmd(locations: Locations, entry_id, session_id, show_list, as_json):
    """Take an entry or a whole session out of every result, without touching the journal.

    The decision is kept in <agent folder>/pi-memory/forgotten.jsonl, outside the
    disposable index, so rebuilding or deleting the index honours it.

    \b
    Examples:
        pimem forget c3d4e5f6
        pimem forget c3d4e5f6 --session 0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01
        pimem forget --session 0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01
        pimem forget --list
    """
    if show_list:
        records = forget.listing(locations)
        if as_json:
            emit_json(records)
            return
        if not records:
            click.echo("Nothing is forgotten.")
        for r in records:
            what = (
                f"entry {r['entry_id']} in session {r['session_id']}"
                if r.get("entry_id")
                else f"session {r['session_id']}"
            )
            click.echo(f"{_local_time(r['at'])}  {what}")
        return
    if not entry_id and not session_id:
        raise UserError("name an entry or a session (e.g. pimem forget c3d4e5f6, or pimem forget --session ID)")
    conn = store.open_located(locations)
    if entry_id:
        record = forget.forget_entry(conn, locations, entry_id, session_id)
    else:
        record = forget.forget_session(conn, locations, session_id)
    if as_json:
        emit_json(record)
    else:
        sid = record["session_id"]
        what = f"entry {entry_id} in session {sid}" if entry_id else f"session {sid}"
        undo = f"pimem unforget {entry_id + ' ' if entry_id else ''}--session {sid}"
        click.echo(f"Forgot {what} (undo: {undo})")


@cli.command()
@click.argument("entry_id", required=False)
@common
@click.option("--session", "session_id", metavar="ID", help="The entry's session, or alone: the whole session")
def unforget(locations: Locations, entry_id, session_id):
    """Undo a forget: the entry or session comes back in results.

    \b
    Examples:
        pimem unforget c3d4e5f6
        pimem unforget --session 0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01
    """
    if not entry_id and not session_id:
        raise UserError("name an entry or a session (e.g. pimem unforget c3d4e5f6, or pimem unforget --session ID)")
    conn = store.open_located(locations)
    record = forget.unforget(conn, locations, entry_id, session_id)
    what = f"entry {entry_id}" if entry_id else "session"
    click.echo(f"Restored {what} in session {record['session_id']}")


QUERY_LIMITS = (
    f"A QUERY holds at most {MAX_TERMS} distinct words, and a search that runs longer "
    f"than {query.QUERY_SECONDS:g} s stops with an error."
)


def search_options(kinds: tuple[str, ...]):
    """The filters search and summaries share; `kinds` are the entry kinds the command takes."""
    options = [
        click.option(
            "--scope",
            type=str,
            default=None,
            help="session, project or global [default: project; session when --session is given]",
        ),
        click.option(
            "--cwd",
            type=click.Path(file_okay=False),
            default=None,
            help="Folder whose project to search [default: the current folder]",
        ),
        click.option(
            "--session",
            "session_id",
            metavar="ID",
            help="Search this session (its id, or its first 8 characters or more)",
        ),
        click.option("--since", metavar="DATE", help="From this day (YYYY-MM-DD, local) or ISO date-time"),
        click.option("--until", metavar="DATE", help="Up to this day (YYYY-MM-DD, local) or ISO date-time"),
        click.option(
            "--kind", "kinds", multiple=True, metavar="KIND", help="Entry kind, repeatable: " + ", ".join(kinds)
        ),
        click.option(
            "--limit",
            default=DEFAULT_LIMIT,
            show_default=True,
            metavar="N",
            help=f"Results, 1 to {MAX_LIMIT}",
        ),
        click.option("--offset", default=None, metavar="N", help="Skip this many results: the next page  [default: 0]"),
        click.option(
            "--like", metavar="ENTRY_ID", help="Only entries of the same text as this one (a hit's 'more like it')"
        ),
        click.option("--json", "as_json", is_flag=True, help="Print JSON (the same shape as the HTTP API)"),
        click.option("--no-index", is_flag=True, help="Search the index as it is, without indexing new lines first"),
    ]

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


@cli.command(epilog=QUERY_LIMITS)
@click.argument("query_text", metavar="[QUERY]", required=False)
@common
@search_options(journal.KINDS)
def search(locations: Locations, query_text, as_json, no_index, **filters):
    """Find entries: every term first, else any term; newest first without a QUERY.

    \b
    Examples:
        pimem search "login bug"
        pimem search migration --scope global --since 2026-03-01 --kind tool_result
    """
    _run_query(locations, query_text, as_json=as_json, no_index=no_index, summaries=False, **filters)


@cli.command(epilog=QUERY_LIMITS)
@click.argument("query_text", metavar="[QUERY]", required=False)
@common
@search_options(journal.SUMMARY_KINDS)
def summaries(locations: Locations, query_text, as_json, no_index, **filters):
    """Compaction and branch summaries, newest first, or searched.

    \b
    Examples:
        pimem summaries
        pimem summaries "auth refactor" --scope global
    """
    _run_query(locations, query_text, as_json=as_json, no_index=no_index, summaries=True, **filters)


def _run_query(locations: Locations, query_text, *, as_json, no_index, summaries: bool, **filters) -> None:
    """Shared by search and summaries: catch up, query, show."""
    conn = store.open_located(locations, create=not no_index)
    if not no_index:
        _catch_up(conn, locations, as_json)
    request = SearchRequest.from_options(query_text, summaries=summaries, **filters)
    data = query.summaries(conn, locations, request) if summaries else query.search(conn, locations, request)
    _show_results(data, query_text, as_json)


def _catch_up(conn, locations: Locations, quiet: bool) -> None:
    """Index new journal lines before answering, unless another process is already doing it."""
    bar = None

    def progress(done, total, path):
        nonlocal bar
        if bar is None and total > 20:
            bar = click.progressbar(length=total, label="Indexing new journal lines", file=sys.stderr)
            bar.__enter__()
        if bar is not None:
            bar.update(1)

    try:
        indexer.index_all(conn, locations, progress=None if quiet or not sys.stderr.isatty() else progress)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _show_results(data: Mapping[str, Any], query_text: str | None, as_json: bool) -> None:
    if as_json:
        emit_json(data)
        return
    where = {"project": f"project {data['root']}", "session": "the session", "global": "every project"}
    after = f" after the first {data['offset']:,}" if data.get("offset") else ""
    header = f"{counted(len(data['results']), 'result')}{after} in {where[data['scope']]} (match: {data['match']})"
    click.secho(header, bold=True)
    if data.get("hint"):
        click.echo(data["hint"])
    for line in _elsewhere_lines(data):
        click.echo(line)
    if data.get("phrases", {}).get("note"):
        click.secho(data["phrases"]["note"], fg="yellow")
    if data["indexing"].get("note"):
        click.secho(data["indexing"]["note"], fg="yellow")
    terms = data["terms"]  # the words searched, as the request cut them: never cut again here
    for hit in data["results"]:
        session = _session_of(data, hit)
        click.echo()
        when = _local_time(hit["timestamp"])
        what = hit["kind"] + (f" ({hit['tool']})" if hit.get("tool") else "")
        click.echo(f"{click.style(when, fg='cyan')}  {what}  {session.get('cwd') or ''}")
        click.echo(f"  id {hit['id']}  session {session.get('short_id') or hit['session_id']}")
        if hit.get("call") or hit.get("outcome"):
            click.echo(f"  {_exchange_line(hit)}")
        click.echo("  " + _mark(hit["excerpt"], terms))
        if hit.get("folded"):
            click.echo(f"  {_folded_line(hit, session, data['action'], query_text)}")
        if hit.get("like"):
            click.echo(f"  {_like_line(hit, data['action'])}")
    if data.get("next_offset") is not None:
        click.echo()
        click.secho(f"[more results: --offset {data['next_offset']}]", fg="yellow")


ELSEWHERE_WORDS = {"project": "elsewhere in this project", "global": "in other projects"}


def _elsewhere_lines(data: Mapping[str, Any]) -> list[str]:
    """Where else the query matches, for a person: `12 results in other projects: --scope global`."""
    return [
        f"{counted(n, 'result')}{'+' if n >= query.ELSEWHERE_MAX else ''} {ELSEWHERE_WORDS[name]}: --scope {name}"
        for name, n in data.get("elsewhere", {}).items()
        if n
    ]


def _session_of(data: Mapping[str, Any], entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the reply's `sessions` map says of the entry's session (its short id, folder, journal)."""
    return data.get("sessions", {}).get(entry["session_id"]) or {}


def _folded_line(hit: Mapping[str, Any], session: Mapping[str, Any], action: str, query_text: str | None) -> str:
    """`and 17 more like it in this session (see them: pimem search ... --session ID)`; `action` is
    the command that found the hit (search or summaries)."""
    import shlex

    command = f"pimem {action} {shlex.quote(query_text or '')} --session {session.get('short_id') or hit['session_id']}"
    return f"and {hit['folded']:,} more like it in this session (see them: {command})"


def _like_line(hit: Mapping[str, Any], action: str) -> str:
    """`and 9 more like it in 4 other sessions (see them: pimem search --like ID)`."""
    like = hit["like"]
    sessions = counted(like["sessions"], "other session")
    return f"and {like['entries']:,} more like it in {sessions} (see them: pimem {action} --like {hit['id']})"


def _local_time(ts: str | None) -> str:
    return journal.local_time(ts, empty="(no time)")


def _mark(text: str, terms: list[str]) -> str:
    """The text with each whole word the terms match (any form: wordforms.matches) bold and underlined."""
    out, last = [], 0
    for m in wordforms.matches(text, terms):
        out += [text[last : m.start()], click.style(m.group(), bold=True, underline=True)]
        last = m.end()
    return "".join(out) + text[last:]


@cli.command()
@click.argument("entry_id")
@common
@click.option(
    "--session", "session_id", metavar="ID", help="Read this session's entry, from any folder (its id or short id)"
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder whose project to read in [default: the current folder]",
)
@click.option(
    "--scope",
    type=str,
    default=None,
    help="session, project or global [default: project; session when --session is given]",
)
@click.option("--offset", default="0", metavar="N", help="Character offset of the page (16,000 a page)")
@click.option("--around", default=None, metavar="N", help="Also the N entries before and after it on its branch (0-20)")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the same shape as the HTTP API)")
@click.option("--no-index", is_flag=True, help="Read from the index as it is, without indexing new lines first")
def read(locations: Locations, entry_id, as_json, no_index, **options):
    """Print one entry's redacted text, reread from its journal.

    \b
    Examples:
        pimem read c3d4e5f6
        pimem read c3d4e5f6 --around 2
        pimem read c3d4e5f6 --session 0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01 --offset 16000
    """
    conn = store.open_located(locations, create=not no_index)
    if not no_index:
        _catch_up(conn, locations, as_json)
    data = query.read(conn, locations, ReadRequest.from_options(entry_id, **options))
    if as_json:
        emit_json(data)
        return
    status_ = data["status"]
    if status_ == "ok":
        e = data["entry"]
        session = _session_of(data, e)
        click.secho(f"{e['kind']} {e['id']}  {_local_time(e['timestamp'])}  {session.get('cwd') or ''}", bold=True)
        click.echo(f"session {e['session_id']}  journal {session.get('journal') or '?'}")
        if e.get("call") or e.get("outcome"):
            click.echo(_exchange_line(e))
        around = data.get("around") or []
        earlier = [a for a in around if a["side"] == "before"]
        for a in earlier:
            _around_block(a)
        click.echo()
        click.echo(data["text"])
        for a in around[len(earlier) :]:
            _around_block(a)
        if data["next_offset"] is not None:
            click.echo()
            click.secho(f"[{data['total_chars']:,} characters; next page: --offset {data['next_offset']}]", fg="yellow")
    elif status_ == "ambiguous":
        click.echo(f"{entry_id} names several entries; pass --session to choose one:")
        for c in data["candidates"]:
            click.echo(f"  session {c['session_id']}  {_local_time(c['timestamp'])}  {c['kind']}  {c['cwd']}")
    elif status_ == "unavailable":
        raise UserError(f"{entry_id} is unavailable: {data['reason']}")
    else:
        raise _not_found(entry_id, data["scope"])


def _exchange_line(e: Mapping[str, Any]) -> str:
    """What a tool call came to, or which call a result answers, on one line."""
    if e.get("call"):
        return f"call: {e['call']}"
    return f"outcome: {e['outcome']}" + (f" — {e['result']}" if e.get("result") else "")


def _around_block(a: Mapping[str, Any]) -> None:
    """An entry around the one read: a header line (its id, time, kind, outcome) and its cut text."""
    click.echo()
    kind = f"{a['kind']}({a['tool']})" if a.get("tool") else a["kind"]
    extra = f"  {_exchange_line(a)}" if a.get("call") or a.get("outcome") else ""
    click.secho(f"[{kind} {a['id']}  {_local_time(a['timestamp'])}]{extra}", dim=True)
    click.echo(a["text"])


def _not_found(entry_id: str, scope: str) -> UserError:
    """No such entry in this scope: try a wider one, or (already global) find ids by searching."""
    wider = scopes.wider(scope, "global")
    if wider:
        return UserError(f"no entry {entry_id} in the {scope} scope; try a wider one", Arg("scope", wider))
    return UserError(f"no entry {entry_id} in the index (find ids with: pimem search QUERY --scope global)")


def activity_options(fn):
    """The scope and date options usage and sessions share: every project unless narrowed."""
    options = [
        click.option("--scope", type=str, default=None, help="project or global [default: global; project with --cwd]"),
        click.option("--cwd", type=click.Path(file_okay=False), default=None, help="Narrow to this folder's project"),
        click.option("--since", metavar="DATE", help="From this day (YYYY-MM-DD, local) or ISO date-time"),
        click.option("--until", metavar="DATE", help="Up to this day (YYYY-MM-DD, local) or ISO date-time"),
        click.option("--json", "as_json", is_flag=True, help="Print JSON (the same shape as the HTTP API)"),
        click.option("--no-index", is_flag=True, help="Read the index as it is, without indexing new lines first"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@cli.command()
@common
@click.option("--by", default="day", show_default=True, help="Count per: " + ", ".join(USAGE_BY))
@activity_options
def usage(locations: Locations, as_json, no_index, **options):
    """Tokens and cost per day, week, month, model, project or session, with a total.

    Every project unless --cwd or --scope project narrows it. Days are local; weeks are ISO (2026-W11).

    \b
    Examples:
        pimem usage --by model --since 2026-03-01
        pimem usage --by week --cwd ~/Apps/prjct --json
    """
    conn = store.open_located(locations, create=not no_index)
    if not no_index:
        _catch_up(conn, locations, as_json)
    data = activity.usage(conn, UsageRequest.from_options(**options))
    if as_json:
        emit_json(data)
        return
    header = (data["by"], "input", "output", "cache read", "cache write", "total", "cost $", "messages", "sessions")
    rows = [_usage_cells(row["key"], row) for row in data["rows"]]
    _echo_table(header, [*rows, _usage_cells("total", data["total"])], ruled=bool(rows))


def _usage_cells(key, figures: Mapping[str, Any]) -> tuple[str, ...]:
    keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")
    return (
        "-" if key is None else str(key),
        *(f"{figures[k]:,}" for k in keys),
        f"{figures['cost']:,.2f}",
        f"{figures['messages']:,}",
        f"{figures['sessions']:,}",
    )


TITLE_MIN = 12  # a title column keeps at least this many characters, however narrow the terminal


def _fit_column(header: Sequence[str], rows: Sequence[Sequence[str]], column: int) -> list[tuple[str, ...]]:
    """The rows with one column's cells cut (ending in …) so the table fits the terminal's width."""
    import shutil

    width = shutil.get_terminal_size().columns
    others = sum(max(len(r[i]) for r in (header, *rows)) + 2 for i in range(len(header)) if i != column)
    room = max(TITLE_MIN, width - others, len(header[column]))
    return [
        tuple(c if i != column or len(c) <= room else c[: room - 1].rstrip() + "…" for i, c in enumerate(row))
        for row in rows
    ]


def _echo_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], ruled: bool = False, text: Sequence[int] = (0,)
) -> None:
    """Columns padded to their widest cell, the `text` columns (the first, by default) left-aligned, numbers
    right; with `ruled`, a rule above the last row (a total)."""
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(cells) -> str:
        return "  ".join(
            c.ljust(w) if i in text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    click.secho(line(header), bold=True)
    for i, row in enumerate(rows):
        if ruled and i == len(rows) - 1:
            click.echo("  ".join("-" * w for w in widths))
        click.echo(line(row))


@cli.command()
@common
@activity_options
@click.option("--model", metavar="MODEL", help="Only sessions that used this model (e.g. claude-opus-4-5)")
@click.option("--limit", default=None, metavar="N", help=f"Sessions, 1 to {MAX_LIMIT} [default: 20]")
@click.option("--offset", default=None, metavar="N", help="Skip this many (the next page: --offset 20)")
@click.option(
    "--sort",
    type=click.Choice(SESSION_SORTS),
    default=None,
    metavar="KEY",
    help="cost, tokens (input and output) or size (entries), largest first [default: date, newest]",
)
def sessions(locations: Locations, as_json, no_index, **options):
    """Sessions newest first (or by --sort), with their duration, tokens, cost, models, tool calls and errors.

    Every project unless --cwd or --scope project narrows it.

    \b
    Examples:
        pimem sessions --since 2026-03-01 --model claude-opus-4-5
        pimem sessions --cwd ~/Apps/prjct --limit 50 --json
    """
    conn = store.open_located(locations, create=not no_index)
    if not no_index:
        _catch_up(conn, locations, as_json)
    data = activity.sessions(conn, SessionsRequest.from_options(**options), locations)
    if as_json:
        emit_json(data)
        return
    header = ("last activity", "session", "title", "project", "time", "tokens", "cost $", "models", "tools", "errors")
    rows = [
        (
            _local_time(s["last_activity"]),
            s["short_id"],
            ("↳ " if s["parent_session_id"] else "") + (s["title"] or ""),
            s["cwd"] or "",
            duration(s["duration_s"]),
            f"{s['input_tokens'] + s['output_tokens']:,}",
            f"{s['cost']:,.2f}",
            ",".join(s["models"]),
            f"{s['tool_calls']:,}",
            f"{s['errors']:,}",
        )
        for s in data["sessions"]
    ]
    if not rows:
        click.echo("No sessions.")
        return
    text = [header.index(name) for name in ("last activity", "session", "title", "project", "models")]
    _echo_table(header, _fit_column(header, rows, header.index("title")), text=text)
    if data["next_offset"] is not None:
        click.secho(f"[more: --offset {data['next_offset']}]", fg="yellow")
