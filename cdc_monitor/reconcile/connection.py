"""Where the source database is and how to log in, settled before Spark starts: the dialect from
the URL, the JDBC driver jar, credentials from a file or the environment (never a flag, never
printed), and a TCP probe so an unreachable database is one line and exit 2."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

from cdc_monitor.errors import EnvironmentProblem, InputError, UsageError
from cdc_monitor.reconcile.dialects import Dialect, dialect_for, redact_url

USER_ENV = "CDC_MONITOR_JDBC_USER"
PASSWORD_ENV = "CDC_MONITOR_JDBC_PASSWORD"
_HOST_PORT = re.compile(r"^jdbc:[a-z0-9]+://(\[[^\]]+\]|[^:/?;,]+)(?::(\d+))?")


@dataclass(frozen=True)
class JdbcSettings:
    url: str
    dialect: Dialect
    jar: Path
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def shown_url(self) -> str:
        return redact_url(self.url)

    def properties(self) -> dict[str, str]:
        """Spark's JDBC options: the driver, read-only sessions, the credentials."""
        props = {"driver": self.dialect.driver, "sessionInitStatement": self.dialect.read_only_statement,
                 "readOnly": "true"}
        if self.user:
            props["user"] = self.user
        if self.password is not None:
            props["password"] = self.password
        return props

    def host_port(self) -> tuple[str, int]:
        m = _HOST_PORT.match(self.url)
        if not m:
            raise UsageError(f"--jdbc-url {self.shown_url}: expected jdbc:{self.dialect.name}://HOST[:PORT]/DATABASE")
        return m.group(1).strip("[]"), int(m.group(2) or self.dialect.default_port)

    def probe(self, timeout: float = 5.0) -> None:
        """A TCP connection to the database's port: an unreachable database fails before Spark starts."""
        host, port = self.host_port()
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as err:
            raise InputError(f"cannot reach the {self.dialect.name} database at {host}:{port} ({err.strerror or err}): "
                             "check --jdbc-url and that the database accepts connections") from None


def _password(password_file: str | None) -> str | None:
    if password_file:
        try:
            return Path(password_file).expanduser().read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as err:
            raise UsageError(f"--jdbc-password-file {password_file}: cannot read it ({err.strerror}): "
                             "give a readable file holding only the password") from None
    return os.environ.get(PASSWORD_ENV)


def _jar(dialect: Dialect, jar: str | None) -> Path:
    if jar:
        path = Path(jar).expanduser()
        if not path.is_file():
            raise UsageError(f"--jdbc-jar {jar}: no such file: give the path of the {dialect.name} JDBC driver jar")
        return path.resolve()
    for candidate in dialect.jar_paths:
        if Path(candidate).is_file():
            return Path(candidate).resolve()
    raise EnvironmentProblem(f"no {dialect.name} JDBC driver found (looked in {', '.join(dialect.jar_paths)}): "
                             f"{dialect.jar_hint}")


def jdbc_settings(url: str, user: str | None = None, password_file: str | None = None,
                  jar: str | None = None) -> JdbcSettings:
    """Flags first, then ``CDC_MONITOR_JDBC_USER``/``CDC_MONITOR_JDBC_PASSWORD``."""
    if re.search(r"(?i)[?&;]password=", url):
        raise UsageError("--jdbc-url carries a password: remove it from the URL and use --jdbc-password-file "
                         f"or {PASSWORD_ENV}")
    dialect = dialect_for(url)
    return JdbcSettings(url=url, dialect=dialect, jar=_jar(dialect, jar),
                        user=user or os.environ.get(USER_ENV), password=_password(password_file))
