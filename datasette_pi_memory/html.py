"""Small HTML helpers for the pages: highlighted excerpts, local times, the activity chart."""

from __future__ import annotations

from urllib.parse import urlencode

from markupsafe import Markup, escape

from pimem_index import wordforms
from pimem_index.journal import local_time
from pimem_index.requests import query_terms


def highlight(text: str | None, query: str | None) -> Markup:
    """The text HTML-escaped, with each whole word the query matches (any form: wordforms.matches) in <mark>."""
    text = text or ""
    out = []
    last = 0
    for m in wordforms.matches(text, query_terms(query)):
        out.append(str(escape(text[last : m.start()])))
        out.append(f"<mark>{escape(m.group(0))}</mark>")
        last = m.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


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


def activity_svg(days: list[dict], width: int = 720, height: int = 140) -> Markup:
    """Entries per day as an inline SVG bar chart, with a tooltip per bar."""
    if not days:
        return Markup("")
    top, bottom, left = 14, 22, 36
    plot_h = height - top - bottom
    plot_w = width - left - 4
    peak = max(d["entries"] for d in days) or 1
    step = plot_w / len(days)
    bar = max(step - 2, 1)
    parts = [
        f'<svg class="pi-memory-activity" role="img" viewBox="0 0 {width} {height}" '
        f'width="100%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">',
        f"<title>Entries per day, {escape(days[0]['day'])} to {escape(days[-1]['day'])} (UTC)</title>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 4}" y2="{top + plot_h}" stroke="#bbb"/>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="10" fill="#666">{peak:,}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" font-size="10" fill="#666">0</text>',
    ]
    for i, d in enumerate(days):
        x = left + i * step + 1
        h = 0 if not d["entries"] else max(1.5, plot_h * d["entries"] / peak)
        y = top + plot_h - h
        label = f"{d['day']}: {d['entries']:,} entries in {d['sessions']:,} sessions"
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="#276890">'
            f"<title>{escape(label)}</title></rect>"
        )
        if (d["day"].endswith("-01") or i == 0) and x < width - 60:
            day = d["day"][:7] if i else d["day"]
            parts.append(f'<text x="{x:.1f}" y="{height - 6}" font-size="10" fill="#666">{escape(day)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
