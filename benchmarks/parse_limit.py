"""The machine's JSON-parse limit: every record's envelope, value and key parsed with orjson in
as many processes as cores, doing nothing else. Usage: python -m benchmarks.parse_limit CAPTURE..."""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _chunks(path: str, parts: int) -> list[tuple[str, int, int]]:
    size = Path(path).stat().st_size
    step = max(1, size // parts)
    return [(path, i * step, size if i == parts - 1 else (i + 1) * step) for i in range(parts)]


def _parse(chunk: tuple[str, int, int]) -> int:
    import orjson

    path, start, end = chunk
    n = 0
    with open(path, "rb") as fh:
        if start:
            fh.seek(start - 1)
            fh.readline()  # the line straddling the boundary belongs to the previous chunk
        while fh.tell() < end:
            line = fh.readline()
            if not line:
                break
            rec = orjson.loads(line)
            if rec.get("payload") is not None:
                orjson.loads(rec["payload"])
            if rec.get("key") is not None:
                orjson.loads(rec["key"])
            n += 1
    return n


def run(paths: list[str], processes: int | None = None) -> dict:
    procs = processes or os.cpu_count() or 1
    chunks = [c for p in paths for c in _chunks(p, procs)]
    started = time.perf_counter()
    with ProcessPoolExecutor(procs) as pool:
        records = sum(pool.map(_parse, chunks))
    took = time.perf_counter() - started
    size = sum(Path(p).stat().st_size for p in paths)
    return {"seconds": round(took, 3), "records": records, "mb": round(size / 1e6, 1), "processes": procs}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1:])))
