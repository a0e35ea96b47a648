"""``watch --web-config``: /metrics over TLS behind basic authentication, in the exporter-toolkit's
format. A real client (401 without or with wrong credentials, 200 with the right ones over HTTPS)
and a real Prometheus scraping with ``basic_auth`` and ``tls_config``, with a CA and a server
certificate made here by openssl."""

from __future__ import annotations

import base64
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest
from click.testing import CliRunner

from cdc_monitor.cli.main import cli
from cdc_monitor.errors import InputError
from cdc_monitor.sinks.prometheus import MetricsServer, MetricsSnapshot
from cdc_monitor.sinks.web_config import load_web_config
from tests.support.promtools import query, start_prometheus

PASSWORD = "s3cret:with colon"
SHIPPED = Path(__file__).resolve().parent.parent / "deploy" / "prometheus" / "web-config.yml"


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, and a server certificate for 127.0.0.1 that it signed."""
    d = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=cdc-monitor test CA",
            "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", str(d / "server.key"),
            "-out", str(d / "server.csr"))
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.crt"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-days", "2", "-extfile", str(d / "ext.cnf"), "-out", str(d / "server.crt"))
    return d


@pytest.fixture(scope="module")
def exporter(pki):
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode().replace("$2b$", "$2y$", 1)  # as htpasswd
    config = pki / "web.yml"  # the shipped example, its hash filled in (relative paths: from the file's folder)
    config.write_text(SHIPPED.read_text().replace("REPLACE_WITH_A_BCRYPT_HASH", f"'{hashed}'"))
    server = MetricsServer("127.0.0.1", 0, MetricsSnapshot(job="web-config-test", records=7), load_web_config(config))
    yield server
    server.stop()


def fetch(server: MetricsServer, pki, auth: tuple[str, str] | None) -> int:
    request = urllib.request.Request(f"https://127.0.0.1:{server.port}/metrics")
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=str(pki / "ca.crt")), timeout=10) as r:
            assert b"cdc_" in r.read()
            return r.status
    except urllib.error.HTTPError as err:
        assert err.headers.get("WWW-Authenticate", "").startswith("Basic")
        return err.code


def test_a_real_client_needs_the_right_credentials_over_https(exporter, pki):
    assert exporter.scheme == "https"
    assert fetch(exporter, pki, None) == 401
    assert fetch(exporter, pki, ("prometheus", "wrong")) == 401
    assert fetch(exporter, pki, ("someone", PASSWORD)) == 401
    assert fetch(exporter, pki, ("prometheus", PASSWORD)) == 200
    assert fetch(exporter, pki, ("prometheus", PASSWORD)) == 200  # remembered: no second bcrypt
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):  # clear text is not served
        urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=5).read()


def test_a_real_prometheus_scrapes_it_with_basic_auth_and_tls(exporter, pki, tmp_path):
    target = f"127.0.0.1:{exporter.port}"
    tls = {"ca_file": str(pki / "ca.crt")}
    extra = [{"scheme": "https", "tls_config": tls, "basic_auth": {"username": "prometheus", "password": PASSWORD}},
             {"scheme": "https", "tls_config": tls, "basic_auth": {"username": "prometheus", "password": "wrong"}},
             {"scheme": "https", "tls_config": {}}]  # an unknown CA: the handshake fails
    prom = start_prometheus(tmp_path, [target] * 3, [], extra)
    try:
        deadline, ups = time.time() + 60, {}
        while time.time() < deadline:
            answer = query(prom, "up")["data"]["result"]
            ups = {r["metric"]["job"]: r["value"][1] for r in answer}
            if len(ups) == 3 and ups["t0"] == "1":
                break
            time.sleep(0.5)
        assert ups == {"t0": "1", "t1": "0", "t2": "0"}, ups
        records = query(prom, 'cdc_window_records{job="web-config-test"}')["data"]["result"]
        assert [r["value"][1] for r in records] == ["7"]
    finally:
        prom.stop()


@pytest.mark.parametrize("text,why", [
    ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n",
     "unsupported tls_server_config key(s) client_auth_type"),
    ("tls_server_config:\n  cert_file: server.crt\n", "needs both cert_file and key_file"),
    ("tls_server_config:\n  cert_file: server.crt\n  key_file: ca.key\n", "cannot load"),
    ("basic_auth_users:\n  prometheus: plain-text\n", "is not a bcrypt hash"),
    ("http_server_config:\n  http2: false\n", "unsupported key(s) http_server_config"),
    ("[", "not YAML"),
])
def test_a_web_config_it_cannot_honour_is_refused(pki, tmp_path, text, why):
    config = pki / f"bad-{abs(hash(text))}.yml"
    config.write_text(text)
    with pytest.raises(InputError, match="--web-config") as err:
        load_web_config(config)
    assert why in str(err.value)
    # the CLI: one line and exit 2, before any broker or Spark
    got = CliRunner().invoke(cli, ["watch", "--bootstrap-servers", "127.0.0.1:1", "--web-config", str(config),
                                   "--checkpoint", str(tmp_path / "ckpt")])
    assert got.exit_code == 2 and why in got.output, got.output
