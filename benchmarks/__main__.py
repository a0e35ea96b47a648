"""``python -m benchmarks NAME [--baseline TREE] [--events N[,N...]] [--rounds N] [options]``; without a
NAME, the registered measurements. Tables go to stdout (markdown), progress to stderr."""

from __future__ import annotations

import argparse
import sys

from benchmarks.harness import REGISTRY, Measurement

MODULES = ("scans", "passes", "large_groups", "watch", "watch_batch", "watch_keys", "decode", "anomalies")


def load() -> None:
    import importlib

    for module in MODULES:  # each registers its measurements
        importlib.import_module(f"benchmarks.{module}")


def main(argv: list[str] | None = None) -> None:
    load()
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in REGISTRY:
        print(__doc__)
        for m in REGISTRY.values():
            print(f"  {m.name:<13} {m.help.splitlines()[0] if m.help else ''}")
        raise SystemExit(0 if not argv or argv[0] in ("-h", "--help") else 2)
    m = REGISTRY[argv[0]]
    m.run(parser(m).parse_args(argv[1:]))


def parser(m: Measurement) -> argparse.ArgumentParser:
    """The common options and ``m``'s own."""
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks {m.name}", description=m.help,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="TREE", help="also measure this checkout (an earlier revision's git worktree)")
    ap.add_argument("--events", default=m.events, type=lambda s: [int(x) for x in s.replace("_", "").split(",")],
                    help=f"events, or sizes comma-separated (default {m.events})")
    ap.add_argument("--rounds", type=int, default=2, help="side-by-side rounds; the best of them is kept")
    for flags, kw in m.options:
        ap.add_argument(*flags, **kw)
    return ap

if __name__ == "__main__":
    main()
