"""A real PostgreSQL server for tests: Debian's postgresql-15 binaries, a cluster in a temp folder
on a loopback port, password authentication (scram), stopped by its PID.

PostgreSQL refuses to run as root: as root the cluster's files belong to the ``postgres`` user and
its processes run as that user (``setpriv``, which execs, so the PID started is the postmaster's).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.broker import free_port
from tests.support.process import ServerProcess

USER = "cdc_test"
PASSWORD = "s3cret-for-tests"
DATABASE = "shop"


def pg_bin(name: str) -> str:
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / name).exists():
            return str(folder / name)
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} not found: apt-get install postgresql-15")
    return found


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]


class Postgres(ServerProcess):
    """``root``: a new folder (made here, traversable by the ``postgres`` user; removed by ``stop``)."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        """``settings``: more server settings (``-c name=value``), e.g. ``wal_level=logical``."""
        root = Path(tempfile.mkdtemp(prefix="cdc-monitor-pg-"))
        root.chmod(0o755)
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        root.mkdir(parents=True, exist_ok=True)
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            for p in (root, pwfile):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        made = subprocess.run(_as_owner([pg_bin("initdb"), "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
                                         "-A", "scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"]),
                              capture_output=True, text=True)
        if made.returncode:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-500:]}")
        self.url = f"jdbc:postgresql://127.0.0.1:{self.port}/{DATABASE}"
        super().__init__(_as_owner([pg_bin("postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(root),
                                    "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
                                    *[a for k, v in (settings or {}).items() for a in ("-c", f"{k}={v}")]]),
                         root / "postgres.log", self._ready, "PostgreSQL", timeout=60)
        self.psql("postgres", f"create database {DATABASE}")

    def _ready(self) -> None:
        subprocess.run([pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], check=True, capture_output=True)

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def psql(self, database: str, sql: str) -> str:
        """Run SQL as the test user; returns psql's unaligned output."""
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", database,
                              "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                             env={**os.environ, "PGPASSWORD": PASSWORD}, check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def sql(self, sql: str) -> str:
        return self.psql(DATABASE, sql)
