"""Small HTML helpers for the pages: highlighted excerpts, local times, the activity chart."""

from __future__ import annotations

import os
import re
from urllib.parse import urlencode

from markupsafe import Markup, escape

from pimem_index.journal import local_time
from pimem_index.requests import query_terms


def highlight(text: str | None, query: str | None) -> Markup:
    """The text HTML-escaped, with each query term (at a word start) wrapped in <mark>."""
    text = text or ""
    terms = query_terms(query)
    if not terms:
        return Markup(escape(text))
    pattern = re.compile(
        r"(?<![^\W_])(" + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)) + ")",
        re.IGNORECASE,
    )
    out = []
    last = 0
    for m in pattern.finditer(text):
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


def duration(seconds: int | None) -> str:
    """A duration as 45 s, 12 min, 3 h 05 min or 2 d 4 h."""
    if seconds is None:
        return "-"
    seconds = max(int(seconds), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


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
