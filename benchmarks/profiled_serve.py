"""`pimem serve` under yappi (CPU clock, every thread), for `python -m benchmarks.api_load --profile`.

    python -m benchmarks.profiled_serve OUT serve --db DB ... (pimem's arguments)

SIGUSR1 forgets what was measured so far (start-up, warm-up). When the server stops (SIGINT),
writes to OUT where its CPU time went: the functions with the most CPU time including what they
call, and with the most of their own. Needs yappi (`pip install yappi`; not a dependency).
"""

from __future__ import annotations

import io
import signal
import sys

TOP = 40


def report() -> str:
    import yappi  # type: ignore[import-untyped,import-not-found,unused-ignore]  # only for profiling: not a dependency

    stats = yappi.get_func_stats()
    total = sum(s.tsub for s in stats) or 1.0
    out = io.StringIO()
    for title, key in (("CPU including callees", "ttot"), ("own CPU", "tsub")):
        out.write(f"== {title} (share of all CPU the profiler saw, {total:.2f} s) ==\n")
        for s in sorted(stats, key=lambda s: getattr(s, key), reverse=True)[:TOP]:
            where = f"{s.module.split('site-packages/')[-1]}:{s.lineno}"
            out.write(f"{getattr(s, key) / total:7.1%} {s.ncall:9} {s.name:40.40} {where}\n")
    return out.getvalue()


def main() -> None:
    import yappi  # type: ignore[import-untyped,import-not-found,unused-ignore]

    out, args = sys.argv[1], sys.argv[2:]
    yappi.set_clock_type("cpu")
    yappi.start(builtins=False, profile_threads=True)
    signal.signal(signal.SIGUSR1, lambda *_: yappi.clear_stats())
    try:
        from pimem_index.cli import cli

        cli.main(args=args, prog_name="pimem", standalone_mode=False)
    except BaseException:
        pass
    finally:
        yappi.stop()
        with open(out, "w") as fh:
            fh.write(report())


if __name__ == "__main__":
    main()
