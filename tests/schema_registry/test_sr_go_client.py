"""franz-go's schema registry client and serde (github.com/twmb/franz-go/pkg/sr, pinned in
compat/srgo/go.mod, fetched by `make sr-clients`) against a real gateway process (the Kafka side:
sr_broker.py): compat/srgo is built and run once, and every value it printed is checked here."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from sr_broker import client_bootstrap  # noqa: F401 - fixture
from sr_fixtures import registry_gateway  # noqa: F401 - fixture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(ROOT, "compat", "srgo")
USER_V1 = ('{"type":"record","name":"User","namespace":"t","fields":[{"name":"name","type":"string"},'
           '{"name":"age","type":"int"}]}')
pytestmark = [pytest.mark.timeout(900),
              pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain (make sr-clients installs one)")]


@pytest.fixture
def run(registry_gateway, client_bootstrap, tmp_path):
    binary = str(tmp_path / "srgo")
    built = subprocess.run(["go", "build", "-o", binary, "."], cwd=MODULE, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    out = subprocess.run([binary, registry_gateway.url, client_bootstrap, "gousers"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_franz_go_registry_serde_and_deletes(run):
    reg, trip, gone = run["registry"], run["round_trip"], run["deletes"]
    assert reg["v1"] == [1, 1] and reg["v1_again"] == 1
    assert (reg["compatible_v2"], reg["compatible_broken"]) == (True, False) and reg["broken_messages"] > 0
    assert reg["register_broken_code"] == 409
    assert reg["v2"] == [2, 2] and reg["lookup_v1"] == [1, 1]
    assert reg["latest"] == ["gousers-value", 2, 2]
    assert json.loads(reg["by_id_schema"])["fields"][2] == {"name": "email", "type": ["null", "string"],
                                                            "default": None}
    assert reg["versions"] == [1, 2] and reg["usages_v1"] == ["gousers-value/1"]
    assert reg["missing_id_code"] == 40403
    assert (reg["set_level"], reg["subject_level"], reg["global_level"]) == ("FULL", "FULL", "BACKWARD")
    # ResetCompatibility reads "compatibility" from the DELETE answer; Confluent (and franz-go's own srfake)
    # answer "compatibilityLevel", so the client shows "" there: only the reset itself is checked
    assert reg["after_reset_code"] == 40408
    # a subject with '/' travels as %2F: the same id, its own versions
    assert reg["slashed"] == [1, 1] and reg["slashed_versions"] == [1]

    # five records framed by sr.Serde with the v2 id, decoded by a Serde that learned the schema by id
    assert trip["frame_ids"] == [2] * 5 and trip["first_header"] == [0, 2]
    assert trip["decoded"] == [{"name": f"n{i}", "age": 20 + i, "email": f"u{i}@example.com" if i % 2 == 0 else None}
                               for i in range(5)]

    assert gone["after_soft_version_code"] == 40401 and gone["soft_deleted_versions"] == [1]
    assert gone["soft_again_code"] == 40406 and gone["after_hard_version_code"] == 40401
    assert gone["hard_before_soft_code"] == 40405
    assert gone["soft_subject"] == [1, 2]
    assert gone["subjects_after_soft"] == [] and gone["subjects_with_deleted"] == ["gousers-value"]
    assert gone["hard_subject"] == [1, 2] and gone["subjects_after_hard"] == []
