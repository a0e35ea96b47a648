"""A real MariaDB server for tests: Debian's mariadb-server (10.11) binaries, a data folder in a temp
folder, on a loopback port, with the binary log Debezium's MySQL connector reads (row format, full
row images, GTIDs), stopped by its PID. As root, mariadbd runs as the ``mysql`` user.
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


class MariaDB(ServerProcess):
    def __init__(self) -> None:
        if not shutil.which("mariadbd", path="/usr/sbin:/usr/bin"):
            raise RuntimeError("MariaDB's mariadbd not found: apt-get install mariadb-server")
        root = Path(tempfile.mkdtemp(prefix="cdc-monitor-mariadb-"))
        root.chmod(0o755)
        self.root, self.port, self.socket = root, free_port(), root / "mysqld.sock"
        user = ["--user=mysql"] if os.geteuid() == 0 else []
        data = root / "data"
        made = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", *user,
                               "--auth-root-authentication-method=socket", "--skip-test-db"],
                              capture_output=True, text=True)
        if made.returncode:
            raise RuntimeError(f"mariadb-install-db failed: {made.stderr.strip()[-500:]}")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("mysql")
            os.chown(root, pw.pw_uid, pw.pw_gid)
        super().__init__(["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}", *user, f"--port={self.port}",
                          "--bind-address=127.0.0.1", f"--socket={self.socket}", f"--pid-file={root / 'mysqld.pid'}",
                          "--server-id=1", f"--log-bin={root / 'binlog'}", "--binlog-format=ROW",
                          "--binlog-row-image=FULL", "--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0",
                          "--skip-name-resolve", "--innodb-buffer-pool-size=32M"],
                         root / "mariadb.log", self._ready, "MariaDB", timeout=60)
        self.sql(f"create database {DATABASE}; create user '{USER}'@'127.0.0.1' identified by '{PASSWORD}'; "
                 f"grant all on *.* to '{USER}'@'127.0.0.1'", database=None)

    def _ready(self) -> None:
        self.sql("select 1", database=None)

    def sql(self, sql: str, database: str | None = DATABASE) -> str:
        """Run SQL as root over the socket; returns the client's tab-separated output."""
        out = subprocess.run(["mariadb", f"--socket={self.socket}", "-uroot", "-N", "-B",
                              *([database] if database else []), "-e", sql], capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"mariadb: {out.stderr.strip()[-500:]}")
        return out.stdout

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.root, ignore_errors=True)
