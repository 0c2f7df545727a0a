"""docs/operations.md's examples are real: its alert rules pass `promtool check rules` and fire as
they say under `promtool test rules` (series fed on promtool's own clock: no wall clock), and its
node-problem-detector config uses only the fields NPD's custom-plugin monitor reads
(pkg/custompluginmonitor/types: CustomPluginConfig, CustomRule) with rules that call `rackgate npd`."""
import json
import re
import shutil
import subprocess

import pytest

from rackgate.report import npd

from ..harness import REPO

pytestmark = pytest.mark.suite

DOC = (REPO / "docs" / "operations.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", DOC, re.S)
RULES = next(body for lang, body in BLOCKS if lang == "yaml" and body.startswith("groups:"))
NPD_CONFIG = json.loads(next(body for lang, body in BLOCKS if lang == "json" and '"plugin": "custom"' in body))

PROMTOOL_TEST = """\
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'rackgate_check_status{rack="r",node="node2",gpu="1",rank="",row="FAB-STATE"}'
        values: '1 0 0 0'
      - series: 'rackgate_check_status{rack="r",node="node1",gpu="0",rank="",row="FAB-STATE"}'
        values: '1 1 1 1'
      - series: 'rackgate_check_valid_until_seconds{rack="r",node="node1",gpu="",rank="",row="PLAT-RAS"}'
        values: '600x40'
      - series: 'rackgate_gpu_hardware_errors{rack="r",node="node3",gpu="2",kind="ras.umc.ue"}'
        values: '0 0 3 3'
      - series: 'rackgate_gpu_hardware_errors{rack="r",node="node3",gpu="2",kind="ras.umc.ce"}'
        values: '5 5 9 9'
    alert_rule_test:
      - eval_time: 0m
        alertname: RackgateCheckFailed
        exp_alerts: []
      - eval_time: 1m
        alertname: RackgateCheckFailed
        exp_alerts:
          - exp_labels: {severity: critical, rack: r, node: node2, gpu: "1", row: FAB-STATE}
            exp_annotations: {summary: "rackgate FAB-STATE failed on r node2 gpu 1 rank "}
      - eval_time: 20m
        alertname: RackgateVerdictExpired
        exp_alerts: []
      - eval_time: 27m
        alertname: RackgateVerdictExpired
        exp_alerts:
          - exp_labels: {severity: warning, rack: r, node: node1, row: PLAT-RAS}
            exp_annotations: {summary: "rackgate PLAT-RAS on r node1 has not been judged again since it expired (is rackgate watch running?)"}
      - eval_time: 2m
        alertname: RackgateGpuUncorrectableErrors
        exp_alerts:
          - exp_labels: {severity: critical, rack: r, node: node3, gpu: "2", kind: ras.umc.ue}
            exp_annotations: {summary: "r node3 gpu 2: 3 uncorrectable ras.umc.ue"}
"""


def _promtool():
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool not installed: bash scripts/system_tools.sh (apt-get install prometheus)")
    return tool


def test_the_alert_rules_check_and_fire_as_documented(tmp_path):
    tool = _promtool()
    (tmp_path / "rules.yml").write_text(RULES)
    check = subprocess.run([tool, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    (tmp_path / "test.yml").write_text(PROMTOOL_TEST)
    test = subprocess.run([tool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert test.returncode == 0, test.stdout + test.stderr


def test_the_npd_config_uses_npds_fields_and_calls_rackgate_npd():
    assert NPD_CONFIG["plugin"] == "custom"
    assert set(NPD_CONFIG) <= {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"}
    assert set(NPD_CONFIG["pluginConfig"]) <= {"invoke_interval", "timeout", "max_output_length", "concurrency",
                                               "enable_message_change_based_condition_update", "skip_initial_status"}
    conditions = {c["type"] for c in NPD_CONFIG["conditions"]}
    assert all(set(c) == {"type", "reason", "message"} for c in NPD_CONFIG["conditions"])
    seen = set()
    for rule in NPD_CONFIG["rules"]:
        assert set(rule) <= {"type", "condition", "reason", "path", "args", "timeout", "invoke_interval"}
        assert rule["type"] == "permanent" and rule["condition"] in conditions
        assert rule["args"][0] == "npd" and rule["args"][1] in npd.CONDITIONS
        seen.add(rule["args"][1])
        assert int(rule["timeout"].rstrip("s")) <= int(NPD_CONFIG["pluginConfig"]["timeout"].rstrip("s"))
    assert seen == set(npd.CONDITIONS)
    assert NPD_CONFIG["pluginConfig"]["max_output_length"] == 80
