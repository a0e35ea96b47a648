"""A Schema Registry client for the driver: the few REST calls a scan needs (Confluent's API, also
served by Karapace, Redpanda and Apicurio's compatibility layer), standard library only.

Credentials come from the config file's ``[schema_registry]`` table or the environment
(``CDC_MONITOR_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO=user:secret`` or ``..._BEARER_TOKEN``), never
from the command line, and never appear in messages, logs or reports (``describe`` shows the URL).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from cdc_monitor.errors import InputError, UsageError

TIMEOUT_S = 10.0
NOT_FOUND = (40403, 40401, 40402)  # schema, subject, version not found


@dataclass(frozen=True)
class RegistrySettings:
    url: str
    basic_auth_user_info: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> RegistrySettings | None:
        url = (conf.get("url") or "").strip()
        if not url:
            return None
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"schema registry URL {url!r} is not http(s)://HOST[:PORT]: check --schema-registry")
        if parts.username or parts.password:
            raise UsageError("the schema registry URL holds credentials: put them in the config file's [schema_registry] "
                             "basic_auth_user_info or CDC_MONITOR_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO instead")
        return cls(url.rstrip("/"), conf.get("basic_auth_user_info") or None, conf.get("bearer_token") or None)

    def headers(self) -> dict[str, str]:
        out = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if self.basic_auth_user_info:
            out["Authorization"] = "Basic " + base64.b64encode(self.basic_auth_user_info.encode()).decode()
        elif self.bearer_token:
            out["Authorization"] = "Bearer " + self.bearer_token
        return out


class RegistryNotFound(InputError):
    pass


class RegistryClient:
    def __init__(self, settings: RegistrySettings):
        self.settings = settings
        self._schemas: dict[int, str | None] = {}

    def _get(self, path: str) -> Any:
        url = self.settings.url + path
        req = urllib.request.Request(url, headers=self.settings.headers())
        where = f"schema registry at {self.settings.url}"
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            body = _error_body(err)
            if err.code in (401, 403):
                raise InputError(f"{where} refused the credentials (HTTP {err.code}): set [schema_registry] "
                                 "basic_auth_user_info or bearer_token (or CDC_MONITOR_SCHEMA_REGISTRY_*)") from None
            if err.code == 404 and body.get("error_code") in NOT_FOUND:
                raise RegistryNotFound(f"{where}: {body.get('message', 'not found')}") from None
            raise InputError(f"{where} answered HTTP {err.code} to GET {path} ({body.get('message', err.reason)}): "
                             "check --schema-registry") from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise InputError(f"{where} is unreachable ({reason}): check --schema-registry and that the registry is up") from None
        except ValueError:
            raise InputError(f"{where} did not answer JSON to GET {path}: is --schema-registry a Schema Registry?") from None

    def check(self) -> None:
        """One cheap call, before Spark starts: reachable, a registry, credentials accepted."""
        subjects = self._get("/subjects")
        if not isinstance(subjects, list):
            raise InputError(f"schema registry at {self.settings.url} answered /subjects with no list: "
                             "is --schema-registry a Schema Registry?")

    def schema(self, schema_id: int) -> str | None:
        """The writer schema (Avro JSON text) with this id; None when the registry does not know it.
        Fetched once per id."""
        if schema_id not in self._schemas:
            try:
                doc = self._get(f"/schemas/ids/{schema_id}")
            except RegistryNotFound:
                self._schemas[schema_id] = None
            else:
                kind = doc.get("schemaType", "AVRO")
                self._schemas[schema_id] = doc["schema"] if kind == "AVRO" else None
        return self._schemas[schema_id]

    def describe(self) -> dict[str, str]:
        return {"schema_registry": self.settings.url}


def _error_body(err: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        body = json.loads(err.read() or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
