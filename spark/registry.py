"""The few schema-registry calls a Spark driver needs (Confluent's REST API, as the gateway serves it on
--schema-registry-port): a schema by id, a subject's latest version, register. Plain HTTP from the
driver only; executors never call the registry (the schemas go into the plan as from_avro/to_avro
arguments)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import quote

from spark.admin import PipelineError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url, self.timeout_s = url.rstrip("/"), timeout_s

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise PipelineError(f"schema registry {method} {path}: HTTP {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise PipelineError(f"schema registry at {self.url} unreachable: {exc}") from None

    def avro_by_id(self, schema_id: int) -> str:
        """The Avro schema text of a global id (PipelineError for another format or an unknown id)."""
        found = self._call("GET", f"/schemas/ids/{int(schema_id)}")
        if found.get("schemaType", "AVRO") != "AVRO":
            raise PipelineError(f"schema id {schema_id} is {found['schemaType']}, not AVRO")
        if found.get("references"):
            raise PipelineError(f"schema id {schema_id} has references; from_avro takes one self-contained schema")
        return found["schema"]

    def latest(self, subject: str) -> dict:
        """{"id", "version", "schema", ...} of the subject's latest version."""
        return self._call("GET", f"/subjects/{quote(subject, safe='')}/versions/latest")

    def register(self, subject: str, schema: str) -> int:
        """The global id of `schema` under `subject` (registered if new)."""
        return int(self._call("POST", f"/subjects/{quote(subject, safe='')}/versions", {"schema": schema})["id"])
