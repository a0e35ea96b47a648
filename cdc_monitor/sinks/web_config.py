"""``watch --web-config FILE``: the Prometheus exporter-toolkit web configuration, so /metrics can be
served over TLS and behind basic authentication like any Prometheus exporter.

The file is YAML in the exporter-toolkit's format (the part of it cdc-monitor serves)::

    tls_server_config:
      cert_file: server.crt        # relative paths: from the file's folder
      key_file: server.key
      min_version: TLS12           # optional: TLS10..TLS13
    basic_auth_users:
      prometheus: $2y$10$...       # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\\n')

An unknown key is refused (exit 2) rather than ignored: a TLS client-authentication setting this
server would not enforce must not look enforced. Passwords are checked with ``bcrypt``; a checked
(user, password) pair is remembered by its SHA-256, as the exporter-toolkit does, so a scrape every
few seconds does not pay bcrypt's deliberate cost each time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_monitor.errors import InputError

TLS_KEYS = {"cert_file", "key_file", "min_version"}
TOP_KEYS = {"tls_server_config", "basic_auth_users"}
TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
REALM = 'Basic realm="cdc-monitor"'


@dataclass
class WebConfig:
    cert_file: Path | None = None
    key_file: Path | None = None
    min_version: str = "TLS12"
    users: dict[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    _verified: set[bytes] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tls(self) -> bool:
        return self.cert_file is not None

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = TLS_VERSIONS[self.min_version]
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context

    def allows(self, authorization: str | None) -> bool:
        """Whether a request with this ``Authorization`` header may read /metrics."""
        if not self.users:
            return True
        if not authorization or not authorization.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(authorization[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        hashed = self.users.get(user)
        if hashed is None:
            return False
        token = hashlib.sha256(f"{user}\0{password}\0".encode() + hashed).digest()
        with self._lock:
            if any(hmac.compare_digest(token, seen) for seen in self._verified):
                return True
        import bcrypt

        try:
            ok = bcrypt.checkpw(password.encode(), hashed)
        except ValueError:
            return False
        if ok:
            with self._lock:
                self._verified.add(token)
        return ok


def _fail(path: Path, what: str) -> InputError:
    return InputError(f"--web-config {path}: {what} (the exporter-toolkit web configuration format: "
                      "tls_server_config with cert_file and key_file, basic_auth_users with bcrypt hashes)")


def load_web_config(path: str | Path) -> WebConfig:
    """Read and check ``path`` (before Spark starts): the certificate and key readable and a pair,
    every hash a bcrypt hash."""
    path = Path(path)
    try:
        import yaml

        raw: Any = yaml.safe_load(path.read_text())
    except OSError as err:
        raise _fail(path, f"cannot read it ({err.strerror})") from None
    except yaml.YAMLError as err:
        raise _fail(path, f"not YAML ({str(err).splitlines()[0]})") from None
    raw = raw or {}
    if not isinstance(raw, dict):
        raise _fail(path, "expected a mapping")
    if unknown := sorted(set(raw) - TOP_KEYS):
        raise _fail(path, f"unsupported key(s) {', '.join(unknown)}")
    config = WebConfig()
    tls = raw.get("tls_server_config")
    if tls is not None:
        if not isinstance(tls, dict):
            raise _fail(path, "tls_server_config must be a mapping")
        if unknown := sorted(set(tls) - TLS_KEYS):
            raise _fail(path, f"unsupported tls_server_config key(s) {', '.join(unknown)}")
        if not tls.get("cert_file") or not tls.get("key_file"):
            raise _fail(path, "tls_server_config needs both cert_file and key_file")
        config.cert_file = (path.parent / str(tls["cert_file"])).resolve()
        config.key_file = (path.parent / str(tls["key_file"])).resolve()
        config.min_version = str(tls.get("min_version") or "TLS12")
        if config.min_version not in TLS_VERSIONS:
            raise _fail(path, f"min_version {config.min_version}: use one of {', '.join(TLS_VERSIONS)}")
        try:
            config.ssl_context()
        except (OSError, ssl.SSLError) as err:
            raise _fail(path, f"cannot load {config.cert_file} with {config.key_file} ({err})") from None
    users = raw.get("basic_auth_users")
    if users is not None:
        if not isinstance(users, dict) or not users:
            raise _fail(path, "basic_auth_users must map user names to bcrypt hashes")
        for user, hashed in users.items():
            text = str(hashed or "")
            if not text.startswith(("$2a$", "$2b$", "$2y$")):
                raise _fail(path, f"the password of {user!r} is not a bcrypt hash")
            config.users[str(user)] = text.encode()
    return config
