"""Sessions with usage figures, written as Pi writes them, and the totals computed straight from the journals.

`write_usage_world` writes three sessions in two projects over two local days, with two models in one
session, a failed tool call, a non-zero exit and an edit; `expected` sums them with json.loads per line,
independently of the indexer, for the agreement tests.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

from support.pijournal import Journal

OPUS = "claude-opus-4-5"
SONNET = "claude-sonnet-4-5"
GPT = "gpt-5"
SECRET = "gh" + "p_" + "Qz7mW2kT9xV4bN8cR1yH5jL3pD6sF0gA2eU8"  # a GitHub token shape: must be masked wherever shown


def assistant(
    j: Journal,
    model: str,
    inp: int,
    out: int,
    cost: float,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
    tool_calls=(),
    provider: str = "anthropic",
) -> list[str]:
    """An assistant message with these usage figures and tool calls; returns the calls' ids."""
    usage = {
        "input": inp,
        "output": out,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": inp + out + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }
    j.assistant("working on it", model=model, provider=provider, usage=usage, tool_calls=list(tool_calls))
    return list(j.call_ids)


def local_noon(days_ago: int) -> datetime:
    """Noon, local time, `days_ago` days before today: far from any day boundary."""
    today = datetime.now().astimezone().replace(hour=12, minute=0, second=0, microsecond=0)
    return today - timedelta(days=days_ago)


def write_usage_world(sessions_dir: Path, home: Path) -> dict:
    """Three sessions: two in Apps/prjct (two models, then one), one in Apps/fluenty (another provider)."""
    prjct, fluenty = str(home / "Apps/prjct"), str(home / "Apps/fluenty")
    big = Journal(sessions_dir, prjct, start=local_noon(3))
    big.user(f"Fix the flaky deploy; the token is {SECRET}")
    [edit] = assistant(
        big,
        OPUS,
        12000,
        800,
        1.25,
        cache_read=40000,
        cache_write=3000,
        tool_calls=[("edit", {"path": "src/deploy.py", "oldText": "a", "newText": "b"})],
    )
    big.tool_result("edit", "edited src/deploy.py", call_id=edit)
    [test] = assistant(big, OPUS, 15000, 300, 0.75, cache_read=52000, tool_calls=[("bash", {"command": "pytest"})])
    big.tool_result("bash", "2 failed", is_error=True, call_id=test)
    big.model_change(SONNET)
    assistant(big, SONNET, 9000, 1200, 0.5, provider="anthropic")
    big.bash("make deploy", "error 2", exit_code=2)

    small = Journal(sessions_dir, prjct, start=local_noon(1))
    small.session_info("Tidy the README")
    small.user("tidy the readme please")
    [write] = assistant(small, SONNET, 3000, 400, 0.05, tool_calls=[("write", {"path": "README.md", "content": "x"})])
    small.tool_result("write", "wrote README.md", call_id=write)

    other = Journal(sessions_dir, fluenty, start=local_noon(1))
    other.user("translate the onboarding screens")
    assistant(other, GPT, 5000, 700, 0.2, provider="openai")
    return {"big": big, "small": small, "other": other, "prjct": prjct, "fluenty": fluenty}


def expected(journals: list[Journal]) -> dict:
    """Totals per session, per local day and per model, summed from the journals' lines (json.loads each)."""
    sessions: dict[str, dict] = {}
    days: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    models: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for j in journals:
        lines = [json.loads(line) for line in Path(j.path).read_text().splitlines()]
        head = lines[0]
        s = sessions[head["id"]] = defaultdict(float, models=set(), cwd=head["cwd"])
        for line in lines[1:]:
            m = line.get("message") or {}
            if m.get("role") == "assistant":
                usage = m["usage"]
                figures = {
                    "input_tokens": usage["input"],
                    "output_tokens": usage["output"],
                    "cache_read_tokens": usage["cacheRead"],
                    "cache_write_tokens": usage["cacheWrite"],
                    "cost": usage["cost"]["total"],
                    "messages": 1,
                }
                day = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).astimezone().date().isoformat()
                for bucket in (s, days[day], models[m["model"]]):
                    for key, value in figures.items():
                        bucket[key] += value
                s["models"].add(m["model"])
                s["tool_calls"] += sum(1 for block in m["content"] if block.get("type") == "toolCall")
            elif m.get("role") == "toolResult" and m.get("isError"):
                s["errors"] += 1
            elif m.get("role") == "bashExecution" and m.get("exitCode"):
                s["errors"] += 1
    total = defaultdict(float)
    for s in sessions.values():
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost", "messages"):
            total[key] += s[key]
    return {"sessions": sessions, "days": days, "models": models, "total": total}
