"""Small HTML helpers for the pages: highlighted excerpts, local times, the activity chart."""

from __future__ import annotations

import os
from urllib.parse import urlencode

from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from pimem_index import local_time, wordforms


def highlight(text: str | None, terms: list[str] | None) -> Markup:
    """The text HTML-escaped, with each whole word the terms match (any form: wordforms.matches) in <mark>.
    `terms` are a reply's (`terms`): the words its query searched, never the query text cut again."""
    text = text or ""
    out = []
    last = 0
    for m in wordforms.matches(text, terms or ()):
        out.append(str(escape(text[last : m.start()])))
        out.append(f"<mark>{escape(m.group(0))}</mark>")
        last = m.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


# CommonMark with raw HTML off: a tag in a summary shows as text; links go through markdown-it's
# validateLink (no javascript:, vbscript:, file: or data: other than images).
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")


def _image_as_link(self, tokens, idx, options, env) -> str:
    """An image in a summary as a link to it (`image: alt`): a page never loads what a journal
    points at (a remote image is a tracking pixel; the pages' policy would block it anyway)."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src") or ""
    return f'<a href="{escape(src)}" rel="noopener noreferrer nofollow">image: {escape(alt)}</a>'


_MARKDOWN.add_render_rule("image", _image_as_link)

# What every page may load: its own origin's scripts, styles and images (inline styles and the
# inline scripts of Datasette's base template included), data: images, and nothing from elsewhere;
# no page may be framed, and no link tells another site which page it came from.
PAGE_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
}


def markdown(text: str | None) -> Markup:
    """Already redacted text rendered as markdown, safely: HTML in it is escaped, never run."""
    return Markup(_MARKDOWN.render(text or ""))


def path(value: str | None) -> Markup:
    """A path HTML-escaped, free to break after each `/` (so a narrow page breaks it between
    folders, never inside a folder's name; the pages' CSS keeps words whole)."""
    return Markup("/<wbr>".join(str(escape(part)) for part in (value or "").split("/")))


def when(ts: str | None) -> str:
    """A journal timestamp (UTC ISO) as local YYYY-MM-DD HH:MM."""
    return local_time(ts)


def qs(**params) -> str:
    """A query string from the non-empty parameters (lists repeat the key)."""
    pairs = []
    for key, value in params.items():
        if value is None or value == "":
            continue
        if isinstance(value, (list, tuple)):
            pairs += [(key, v) for v in value if v not in (None, "")]
        else:
            pairs.append((key, value))
    return urlencode(pairs)


SEARCH_FORM = ("q", "scope", "cwd", "session_id", "since", "until", "limit", "offset")


def search_qs(params: dict, **changes) -> str:
    """The search form's query string (`params` as views.query_args gives them) with `changes`: a
    link to the next page, another scope or one session."""
    values = {name: params.get(name) for name in SEARCH_FORM}
    values["kind"] = params.get("kinds") or []
    values.update(changes)
    return qs(**values)


def activity_svg(days: list[dict], height: int = 120) -> Markup:
    """Entries per day as a bar chart as wide as the page: bars in an SVG stretched to the width
    (no text inside, so nothing is distorted), its scale and month labels in HTML around it."""
    if not days:
        return Markup("")
    peak = max(d["entries"] for d in days) or 1
    step = 100 / len(days)
    bars = []
    labels = []
    for i, d in enumerate(days):
        h = 0 if not d["entries"] else max(1.5, 100 * d["entries"] / peak)
        label = f"{d['day']}: {d['entries']:,} entries in {d['sessions']:,} sessions"
        bars.append(
            f'<rect x="{i * step + step * 0.1:.3f}" y="{100 - h:.2f}" width="{step * 0.8:.3f}" height="{h:.2f}" '
            f'fill="#276890"><title>{escape(label)}</title></rect>'
        )
        if (d["day"].endswith("-01") or i == 0) and i < len(days) - 4:
            day = d["day"][:7] if i else d["day"]
            labels.append(f'<span style="left: {i * step:.2f}%">{escape(day)}</span>')
    title = f"Entries per day, {days[0]['day']} to {days[-1]['day']} (UTC)"
    return Markup(
        f'<figure class="pi-memory-chart" aria-label="{escape(title)}">'
        f'<div class="pi-memory-chart-scale"><span>{peak:,}</span><span>0</span></div>'
        f'<div class="pi-memory-chart-plot"><svg class="pi-memory-activity" role="img" viewBox="0 0 100 100" '
        f'preserveAspectRatio="none" width="100%" height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(bars)}</svg>"
        f'<div class="pi-memory-chart-days">{"".join(labels)}</div></div></figure>'
    )


# ---- figures: money, tokens, durations, bars -------------------------------------------------

# One colour per model on the usage page, in the order the models cost (the rest share the last).
MODEL_COLOURS = ("#276890", "#d9822b", "#4a9a4a", "#8a5bb0", "#c0392b", "#17a2b8", "#b5a300", "#7f7f7f")


def money(cost: float | None) -> str:
    """Dollars as people read them: $1,234.56, $0.20, $0.0104 (under a cent: 4 decimals), - for none."""
    if cost is None:
        return "-"
    if cost == 0:
        return "$0"
    return f"${cost:,.2f}" if abs(cost) >= 0.01 else f"${cost:.4f}"


def tokens(count: int | None) -> str:
    """A token count shortened: 917, 3.1 k, 42.6 M, 1.2 B."""
    if count is None:
        return "-"
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(count) >= size:
            return f"{count / size:,.1f} {unit}"
    return f"{count:,}"


def colours(names: list[str]) -> dict[str, str]:
    """A colour for each name (models, costliest first), the palette's last for any past it."""
    return {name: MODEL_COLOURS[min(i, len(MODEL_COLOURS) - 1)] for i, name in enumerate(names)}


def share(value: float | None, peak: float | None) -> str:
    """value as a percentage of peak for a CSS width or height (0 to 100, 2 decimals)."""
    if not value or not peak:
        return "0"
    return f"{min(100.0, 100.0 * value / peak):.2f}"


def short_path(path: str | None) -> str:
    """A folder with the home folder written ~ (as people read their projects)."""
    path = path or ""
    home = os.path.expanduser("~").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path


def folder(path: str | None) -> Markup:
    """A folder for a table cell: home as ~, a line-break opportunity after each slash, the full path on hover."""
    parts = short_path(path).split("/")
    return Markup(f'<span title="{escape(path or "")}">' + "/<wbr>".join(str(escape(p)) for p in parts) + "</span>")
