"""A session as a conversation, for its page: a page of entries in journal order or along one branch,
each tool call with its result beneath it, settings and labels where they occur, and the forks.

Every string comes from the journal through the trusted read path and is redacted here: an
entry's pieces (thinking, a tool call's arguments, an edit's old and new text) are cut from its
reread line (`reread_shape`) and masked with `redact_part` over the entry's whole text, so each
piece shows exactly what the whole would. Settings and labels are the lines between indexed
entries (never an entry's own line: `reread.nodes_between`), redacted here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from pimem_index import db, journal
from pimem_index.errors import Arg, UserError
from pimem_index.locations import Locations
from pimem_index.redaction import context_of, redact_part
from pimem_index.search import session_info
from pimem_index.search.reread import (
    JOURNAL_HEAD_COLUMNS,
    EntryRow,
    JournalHead,
    entry_json,
    nodes_between,
    reread_shape,
    select_entries,
    unavailable_reason,
    unavailable_text,
)
from pimem_index.session import browse, diffs, review

PAGE = 200
TEXT_CHARS = 20_000
LABEL_CHARS = 500
EXCERPT_CHARS = 140
FAILURE_EXCERPTS = 50  # failures listed with their first words (each is a reread)
# Characters of the diff Pi recorded in an edit result that a page reads (its first lines, cut at a line).
RECORDED_DIFF_CHARS = 400_000
# Entries looked at past a page's edge for the other half of a tool call cut by the page break.
LOOKAROUND = 24
SHOWN_NODES = ("model_change", "thinking_level_change", "label", "session_info")
# A fork lists at most this many branches (the one continuing below among them), then says how many more.
FORK_BRANCHES = 12


class Ref(NamedTuple):
    """An entry of the session as the tree knows it: the index's metadata, no text."""

    rowid: int
    id: str
    parent_id: str | None
    kind: str
    file_id: int
    offset: int
    length: int


@dataclass
class Tree:
    """The session's entries in journal order, the other lines of its tree (by their place: shown
    before entry `before`), and each entry's parent and children among entries."""

    refs: list[Ref]
    nodes: list[tuple[int, journal.Node]] = field(default_factory=list)
    parent: dict[str, str | None] = field(default_factory=dict)
    children: dict[str | None, list[str]] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    by_id: dict[str, journal.Node] = field(default_factory=dict)
    before: dict[int, list[journal.Node]] = field(default_factory=dict)
    # Worked out once per tree, on first use: each entry's newest descendant, its depth, its excerpt.
    latest: dict[str, str] | None = None
    depths: dict[str, int] = field(default_factory=dict)
    excerpts: dict[str, str | None] = field(default_factory=dict)


def page(
    conn: db.Connection,
    locations: Locations,
    session_id: str,
    *,
    offset: int = 0,
    entry: str | None = None,
    leaf: str | None = None,
    limit: int = PAGE,
) -> dict | None:
    """A page of the session's conversation: `offset` into journal order, or into the path from
    the root to `leaf`; with `entry`, the page holding that entry. None when no journal has the session."""
    header = browse.session_header(conn, session_id)
    if header is None:
        return None
    tree = load_tree(conn, locations, session_id)
    order = path_to(tree, _known(tree, leaf, "leaf")) if leaf else [r.id for r in tree.refs]
    if entry is not None and _known(tree, entry, "entry") not in order:
        leaf, order = None, [r.id for r in tree.refs]  # off the branch shown: the whole journal holds it
    if entry is not None:
        offset = order.index(entry) // limit * limit
    total = len(order)
    shown = order[offset : offset + limit]
    rowids = {tree.refs[tree.index[eid]].rowid: eid for eid in order}
    failures = review.failures(conn, sorted({ref.file_id for ref in tree.refs}), rowids, order)
    for failure in failures[:FAILURE_EXCERPTS]:
        failure["excerpt"] = _excerpt(conn, locations, tree, failure["id"])
    return {
        **header,
        "view": "path" if leaf else "journal",
        "leaf": leaf,
        "total": total,
        "offset": offset,
        "limit": limit,
        "past_end": 0 < offset >= total,
        "last_offset": max(0, (total - 1) // limit * limit),
        "next_offset": offset + limit if offset + limit < total else None,
        "items": _items(conn, locations, tree, order, shown, offset, leaf is not None),
        "failures": failures[: review.FAILURES_SHOWN],
        "failures_total": len(failures),
        "failure_nav": {f["id"]: f for f in failures},
        "changed": _files_changed(conn, locations, tree, session_id, rowids),
        # the header's figures for the branch shown (None: the whole session's, from the sessions view)
        "branch_figures": review.figures(conn, list(rowids)) if leaf else None,
    }


def _known(tree: Tree, entry_id: str, name: str) -> str:
    """The entry id when the session has it; otherwise a one-line error naming the parameter."""
    if entry_id not in tree.index:
        raise UserError(f"this session has no entry {entry_id!r}; give one of its entry ids", Arg(name, "c3d4e5f6"))
    return entry_id


def _files_changed(conn, locations, tree: Tree, session_id: str, rowids: dict[int, str]) -> dict:
    """The files the entries shown changed (edit and write calls that did not fail), in the order first
    changed, each with its changes: an edit's diff (Pi's, else computed per replacement), a write's size.
    The first review.CALLS_SHOWN calls are read from the journal; the rest are only counted."""
    found = review.changes(conn, session_id, rowids)
    shown = found[: review.CALLS_SHOWN]
    wanted = {c.entry_rowid for c in shown} | {c.result_rowid for c in shown if c.result_rowid}
    rows = review.rows_by_rowid(conn, sorted(wanted))
    views: dict[int, dict] = {}

    def view(rowid: int | None) -> dict | None:
        if rowid is None or rowid not in rows:
            return None
        if rowid not in views:
            views[rowid] = entry_view(conn, locations, rows[rowid], tree)
        return views[rowid]

    files: dict[str, dict] = {}
    for n, change in enumerate(found):
        item = files.setdefault(change.path, {"path": change.path, "changes": [], "more": 0, "added": 0, "removed": 0})
        if n >= review.CALLS_SHOWN:
            item["more"] += 1
            continue
        entry = view(change.entry_rowid)
        call = next((c for c in _calls(entry) if c["call_id"] == change.call_id), None) if entry else None
        result = view(change.result_rowid)
        recorded = result.get("diff") if result else None
        shown_change = {"entry": rowids[change.entry_rowid], "tool": change.tool, "call": call, "diff": recorded}
        if recorded:
            item["added"] += recorded["added"]
            item["removed"] += recorded["removed"]
        elif call and call["view"] == "edit":
            item["added"] += sum(r["diff"]["added"] for r in call["edits"])
            item["removed"] += sum(r["diff"]["removed"] for r in call["edits"])
        item["changes"].append(shown_change)
    return {"files": list(files.values()), "calls": len(found), "read": len(shown)}


# ---- the tree ----------------------------------------------------------------------------------------


def load_tree(conn: db.Connection, locations: Locations, session_id: str) -> Tree:
    """The session's entries (from the index) and the other lines of its tree (from the journal)."""
    refs = [
        Ref._make(row)
        for row in conn.execute(
            "SELECT e.rowid, e.id, e.parent_id, e.kind, e.file_id, e.offset, e.length "
            "FROM entries e JOIN files f ON f.id = e.file_id WHERE f.session_id = ? ORDER BY f.started, f.id, e.line",
            (session_id,),
        )
    ]
    files = {
        row[0]: JournalHead._make(row[1:])
        for row in conn.execute(f"SELECT id, {JOURNAL_HEAD_COLUMNS} FROM files WHERE session_id = ?", (session_id,))
    }
    tree = Tree(refs, nodes=list(_nodes(locations, refs, files)))
    for i, ref in enumerate(refs):
        tree.index.setdefault(ref.id, i)
    for before, node in tree.nodes:
        tree.before.setdefault(before, []).append(node)
        if node.id:
            tree.by_id.setdefault(node.id, node)
    _link(tree)
    for _before, node in tree.nodes:
        if node.type == "label" and node.target_id:
            if node.value:
                tree.labels[node.target_id] = node.value
            else:
                tree.labels.pop(node.target_id, None)
    return tree


def _link(tree: Tree) -> None:
    """Each entry's parent among entries (through the settings, labels and other lines between),
    and each entry's children in journal order. A journal without tree ids (version 1) is a line."""
    by_id = tree.by_id
    linear = all(ref.parent_id is None for ref in tree.refs)
    previous = None
    for ref in tree.refs:
        if ref.id in tree.parent:
            continue  # a repeated id: the first one counts
        parent = previous if linear else _entry_ancestor(ref.parent_id, tree.index, by_id)
        tree.parent[ref.id] = parent
        tree.children.setdefault(parent, []).append(ref.id)
        previous = ref.id


def _entry_ancestor(parent_id: str | None, entries: dict[str, int], nodes: dict[str, journal.Node]) -> str | None:
    """The nearest entry above a line: its parent, or the parent's parent when that is not an entry..."""
    seen: set[str] = set()
    while parent_id is not None and parent_id not in entries:
        node = nodes.get(parent_id)
        if node is None or parent_id in seen:
            return None
        seen.add(parent_id)
        parent_id = node.parent_id
    return parent_id


def path_to(tree: Tree, leaf: str) -> list[str]:
    """The entries from the root to `leaf`, in order."""
    path: list[str] = []
    seen: set[str] = set()
    at: str | None = leaf
    while at is not None and at not in seen:
        seen.add(at)
        path.append(at)
        at = tree.parent.get(at)
    return path[::-1]


def depth(tree: Tree, entry_id: str) -> int:
    """How many entries the path from the root to `entry_id` holds (`len(path_to)`), remembered for
    the tree: each entry's depth is worked out once, so a page of a deep tree costs its page."""
    depths = tree.depths
    chain: list[str] = []
    seen: set[str] = set()
    at: str | None = entry_id
    while at is not None and at not in depths and at not in seen:  # a cycle of parent ids ends the walk
        seen.add(at)
        chain.append(at)
        at = tree.parent.get(at)
    base = depths.get(at, 0) if at is not None else 0
    for n, eid in enumerate(reversed(chain), 1):
        depths[eid] = base + n
    return depths[entry_id]


def latest_leaf(tree: Tree, entry_id: str) -> str:
    """The newest entry (in journal order) below `entry_id`, itself included: the end of its latest branch."""
    if tree.latest is None:
        tree.latest = _latest_leaves(tree)
    return tree.latest.get(entry_id, entry_id)


def _latest_leaves(tree: Tree) -> dict[str, str]:
    """Every entry's newest descendant, itself included, in one walk of the tree (iterative, each entry
    once: a cycle of parent ids in a hostile journal is walked once and ends there)."""
    index, children = tree.index, tree.children
    latest: dict[str, str] = {}
    for start in tree.parent:  # every entry id, once
        if start in latest:
            continue
        latest[start] = start
        stack = [(start, iter(children.get(start, ())))]
        while stack:
            at, below = stack[-1]
            child = next(below, None)
            if child is None:
                stack.pop()
                if stack:
                    up = stack[-1][0]
                    if index[latest[at]] > index[latest[up]]:
                        latest[up] = latest[at]
            elif child in latest:  # walked already (from an earlier start, or on this path: a cycle)
                if index[latest[child]] > index[latest[at]]:
                    latest[at] = latest[child]
            else:
                latest[child] = child
                stack.append((child, iter(children.get(child, ()))))
    return latest


def _nodes(locations: Locations, refs: list[Ref], files: dict[int, JournalHead]):
    """(entry index it comes before, node) for every line between entries that is not an entry,
    in journal order; a line after a journal's last entry comes before the next journal's first."""
    by_file: dict[int, list[int]] = {}
    for i, ref in enumerate(refs):
        by_file.setdefault(ref.file_id, []).append(i)
    for file_id, indexes in by_file.items():
        jf = files.get(file_id)
        if jf is None:
            continue
        gaps, start = [], 0
        for i in indexes:
            gaps.append((i, start, refs[i].offset))
            start = refs[i].offset + refs[i].length + 1
        gaps.append((indexes[-1] + 1, start, jf.cursor))
        yield from nodes_between(locations, jf, gaps)


# ---- the page's items --------------------------------------------------------------------------------


def _items(conn, locations, tree: Tree, order: list[str], shown: list[str], offset: int, path_view: bool) -> list:
    """What the page shows, in order: entries (tool results under their calls), settings and labels,
    forks after the entry they fork from, and where journal order jumps to another branch."""
    rows = _rows(conn, [tree.refs[tree.index[i]].rowid for i in shown])
    views = {eid: entry_view(conn, locations, rows[eid], tree) for eid in shown if eid in rows}
    attached = _pair_calls(conn, locations, tree, order, shown, offset, views)
    items: list[dict] = []
    for n, eid in enumerate(shown):
        position = offset + n
        items += _settings_before(tree, order, position, path_view)
        parent = tree.parent.get(eid)
        if not path_view and position > 0 and parent is not None and parent != order[position - 1]:
            items.append({"type": "jump", "parent": parent, "excerpt": _excerpt(conn, locations, tree, parent)})
        if eid not in attached and eid in views:
            items.append({"type": "entry", "entry": views[eid]})
        if len(tree.children.get(eid, ())) > 1:
            items.append(_fork(conn, locations, tree, eid, order, position))
    if not path_view and offset + len(shown) >= len(order):
        items += [_setting(node, tree) for node in tree.before.get(len(order), ()) if node.type in SHOWN_NODES]
    return items


def _rows(conn, rowids: list[int]) -> dict[str, EntryRow]:
    rows: dict[str, EntryRow] = {}
    for i in range(0, len(rowids), 500):
        chunk = rowids[i : i + 500]
        for row in select_entries(conn, f"e.rowid IN ({','.join('?' * len(chunk))})", chunk):
            rows.setdefault(row.id, row)
    return rows


def _settings_before(tree: Tree, order: list[str], position: int, path_view: bool) -> list[dict]:
    """Settings and labels just before the entry at `position`: in journal order the lines before it;
    on a path, the lines between it and the entry before it in the tree."""
    eid = order[position]
    if not path_view:
        return [_setting(node, tree) for node in tree.before.get(tree.index[eid], ()) if node.type in SHOWN_NODES]
    by_id = tree.by_id
    chain: list[journal.Node] = []
    seen: set[str] = set()
    at = tree.refs[tree.index[eid]].parent_id
    while at is not None and at in by_id and at not in tree.index and at not in seen:  # labels in a cycle: once
        seen.add(at)
        chain.append(by_id[at])
        at = by_id[at].parent_id
    return [_setting(node, tree) for node in reversed(chain) if node.type in SHOWN_NODES]


def _setting(node: journal.Node, tree: Tree) -> dict:
    """A model change, thinking level change, label or session name as the page shows it (redacted;
    a label's target only when it is an entry of the session, never any other string)."""
    return {
        "type": node.type,
        "timestamp": node.timestamp,
        "value": _redacted(node.value, LABEL_CHARS),
        "target": node.target_id if node.target_id in tree.index else None,
    }


def _fork(conn, locations, tree: Tree, eid: str, order: list[str], position: int) -> dict:
    """Where two or more entries share a parent: the first FORK_BRANCHES branches (the one continuing
    below always among them), each with its first entry and where it ends, and how many more there are."""
    here = order[position + 1] if position + 1 < len(order) else None
    children = tree.children[eid]
    listed = children[:FORK_BRANCHES]
    if here is not None and here not in listed and tree.parent.get(here) == eid:
        listed = [*listed[:-1], here]
    branches = []
    for child in listed:
        leaf = latest_leaf(tree, child)
        branches.append(
            {
                "id": child,
                "kind": tree.refs[tree.index[child]].kind,
                "leaf": leaf,
                "length": depth(tree, leaf) - depth(tree, eid),
                "next": child == here,
                "excerpt": _excerpt(conn, locations, tree, child),
            }
        )
    return {
        "type": "fork",
        "parent": eid,
        "branches": branches,
        "count": len(children),
        "more": len(children) - len(listed),
    }


def _excerpt(conn, locations, tree: Tree, eid: str) -> str | None:
    """An entry's first words (its first text block, else its text), redacted, to name a branch or a
    jump's target; read once a page (many jumps may lead back to one entry)."""
    if eid not in tree.excerpts:
        tree.excerpts[eid] = _first_words(conn, locations, tree, eid)
    return tree.excerpts[eid]


def _first_words(conn, locations, tree: Tree, eid: str) -> str | None:
    rows = _rows(conn, [tree.refs[tree.index[eid]].rowid])
    shape = reread_shape(conn, rows[eid], locations) if eid in rows else None
    if shape is None or not shape.text:
        return None
    span = next((b.span for b in shape.blocks if b.kind == "text"), journal.Span(0, len(shape.text)))
    end = min(span.end, span.start + EXCERPT_CHARS * 4)
    return session_info.one_line(redact_part(shape.text, span.start, end), EXCERPT_CHARS)


# ---- tool calls and their results ---------------------------------------------------------------------


def _pair_calls(conn, locations, tree: Tree, order, shown, offset: int, views: dict[str, dict]) -> set[str]:
    """Put each tool result on the page beneath its call (paired by toolCallId) and return those
    results' ids; a call or result whose other half is on another page gets that entry's id."""
    calls = {c["call_id"]: (eid, c) for eid, v in views.items() for c in _calls(v) if c["call_id"]}
    attached: set[str] = set()
    for eid in shown:
        view = views.get(eid)
        if view is None or view["kind"] != "tool_result" or not view.get("call_id"):
            continue
        if view["call_id"] in calls:
            _eid, call = calls.pop(view["call_id"])
            call["result"] = view
            attached.add(eid)
        else:
            view["call_entry"] = _find_call(conn, locations, tree, order[max(0, offset - LOOKAROUND) : offset], view)
    unpaired = {cid: call for cid, (_eid, call) in calls.items()}
    if unpaired:
        after = order[offset + len(shown) : offset + len(shown) + LOOKAROUND + len(unpaired)]
        _find_results(conn, locations, tree, after, unpaired)
    return attached


def _calls(view: dict) -> list[dict]:
    return [b["call"] for b in view.get("blocks", ()) if b["kind"] == "tool_call"]


def _find_call(conn, locations, tree: Tree, before: list[str], result: dict) -> str | None:
    """The id of the assistant entry, among those just before the page, that made the result's call."""
    refs = [tree.refs[tree.index[e]] for e in reversed(before) if tree.refs[tree.index[e]].kind == "assistant"]
    rows = _rows(conn, [r.rowid for r in refs])
    for ref in refs:
        shape = reread_shape(conn, rows[ref.id], locations) if ref.id in rows else None
        if shape and any(b.call and b.call.call_id == result["call_id"] for b in shape.blocks):
            return ref.id
    return None


def _find_results(conn, locations, tree: Tree, after: list[str], unpaired: dict[str, dict]) -> None:
    """Name, on each call whose result is just after the page, that result's entry id."""
    refs = [tree.refs[tree.index[e]] for e in after if tree.refs[tree.index[e]].kind == "tool_result"]
    rows = _rows(conn, [r.rowid for r in refs])
    for ref in refs:
        shape = reread_shape(conn, rows[ref.id], locations) if ref.id in rows else None
        if shape and shape.call_id in unpaired:
            unpaired.pop(shape.call_id)["result_entry"] = ref.id


# ---- one entry -----------------------------------------------------------------------------------------


def entry_view(conn: db.Connection, locations: Locations, row: EntryRow, tree: Tree) -> dict:
    """One entry as the page shows it: its keys, and its pieces reread and redacted (a tool call as its
    tool's view, a result's error flag, a bash run's exit), or why it is unavailable."""
    data = entry_json(row)
    data.update(rowid=row.rowid, blocks=[], unavailable=False, failed=False)
    data["label"] = _redacted(tree.labels.get(row.id), LABEL_CHARS)
    shape = reread_shape(conn, row, locations)
    if shape is None:
        data.update(unavailable=True, text=unavailable_text(unavailable_reason(row, locations)))
        return data
    cut = Cutter(shape.text)
    data["blocks"] = [_block(cut, b) for b in shape.blocks]
    if row.kind == "assistant":
        data.update(
            model=_redacted(shape.model, LABEL_CHARS),
            stop_reason=shape.stop_reason,
            error_message=_redacted(shape.error_message, TEXT_CHARS),
            failed=shape.stop_reason in ("error", "aborted"),
        )
    elif row.kind == "tool_result":
        data.update(call_id=shape.call_id, is_error=shape.is_error, failed=shape.is_error, diff=_recorded(shape.diff))
    elif row.kind == "bash":
        failed = shape.cancelled or (shape.exit_code is not None and shape.exit_code != 0)
        data.update(exit_code=shape.exit_code, cancelled=shape.cancelled, truncated=shape.truncated, failed=failed)
    return data


class Cutter:
    """Pieces of one entry's text, each redacted as the whole text would be (one context per entry)."""

    def __init__(self, text: str):
        self.text = text
        self.context = context_of(text)

    def piece(self, span: journal.Span, limit: int = TEXT_CHARS) -> dict:
        """{text, total_chars, truncated} of a span, at most `limit` characters of it shown."""
        end = min(span.end, span.start + limit)
        text = redact_part(self.text, span.start, end, self.context)
        return {"text": text, "total_chars": span.end - span.start, "truncated": span.end > end}


def _block(cut: Cutter, block: journal.Block) -> dict:
    if block.call is not None:
        return {"kind": "tool_call", "call": _call(cut, block.call)}
    return {"kind": block.kind, **cut.piece(block.span)}


def _call(cut: Cutter, shape: journal.ToolCallShape) -> dict:
    """A tool call as its tool's view: an edit as a diff, a write's content folded, a command, or the
    arguments as keys and values; never its raw JSON."""
    tool = cut.text[shape.name.start : shape.name.end]
    raw = {cut.text[k.start : k.end]: v for k, v in shape.arguments}
    call = {
        "call_id": shape.call_id,
        "name": cut.piece(shape.name, LABEL_CHARS)["text"],
        "path": cut.piece(raw["path"], LABEL_CHARS)["text"] if "path" in raw else None,
        "view": "args",
        "result": None,
        "result_entry": None,
    }
    skip = {"path"}
    replacements = _replacements(cut, shape) if tool == journal.EDIT_TOOL else []
    if replacements:
        call.update(view="edit", edits=replacements, truncated=any(r["truncated"] for r in replacements))
        skip |= {"oldText", "newText"}
    elif tool == "write" and "content" in raw:
        span = raw["content"]
        call.update(view="write", content=cut.piece(span), lines=cut.text.count("\n", span.start, span.end) + 1)
        skip.add("content")
    elif tool == "bash" and "command" in raw:
        call.update(view="bash", command=cut.piece(raw["command"]))
        skip.add("command")
    call["args"] = [
        {"key": cut.piece(k, LABEL_CHARS)["text"], **cut.piece(v)}
        for k, v in shape.arguments
        if cut.text[k.start : k.end] not in skip
    ]
    return call


def _replacements(cut: Cutter, shape: journal.ToolCallShape) -> list[dict]:
    """An edit call's replacements in order, each {old, new, diff, truncated}: the `oldText` and
    `newText` pairs of its text (journal.argument_lines writes every shape of `edits` that way)."""
    pairs: list[dict] = []
    for k, v in shape.arguments:
        key = cut.text[k.start : k.end]
        if key not in ("oldText", "newText"):
            continue
        side = "old" if key == "oldText" else "new"
        if not pairs or side in pairs[-1]:
            pairs.append({})
        pairs[-1][side] = cut.piece(v)
    empty = {"text": "", "total_chars": 0, "truncated": False}
    out = []
    for pair in pairs:
        old, new = pair.get("old", empty), pair.get("new", empty)
        out.append(
            {
                "old": old,
                "new": new,
                "diff": diffs.compute(old["text"], new["text"]).as_dict(),
                "truncated": old["truncated"] or new["truncated"],
            }
        )
    return out


def _recorded(text: str | None) -> dict | None:
    """The diff Pi recorded in an edit's result (`details.diff`), redacted as one text, as diff lines."""
    if not text:
        return None
    end = len(text)
    if end > RECORDED_DIFF_CHARS:
        end = text.rfind("\n", 0, RECORDED_DIFF_CHARS) + 1 or RECORDED_DIFF_CHARS
    return diffs.recorded(redact_part(text, 0, end)).as_dict()  # as the whole diff redacted shows it


def _redacted(value: str | None, limit: int) -> str | None:
    """A journal string (a model, a label, an error message) as redact(value) shows its first `limit`
    characters: redacted with the whole value's context (a word far beyond the cut counts), then cut."""
    return redact_part(value, 0, limit)[:limit] if value else None
