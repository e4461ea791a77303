"""The monitoring backend's files, without promtool: structure, determinism, escaping,
the dashboard's validity and that it queries only series the rules or exporters provide."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from topogen.config import DEFAULT_RUNBOOK_URL, TopogenConfig, parse_config
from topogen.errors import InputError
from topogen.pipeline.analyze import ClusterAnalysis
from topogen.render.base import RenderedFile
from topogen.render.monitoring import DASHBOARD_SCHEMA_VERSION, render_monitoring
from topogen.render.monitoring_rules import go_text, ksm_label, promql_string, regex_quote

from .conftest import EXAMPLE
from .synthetic import dashboard_exprs

BASE = "monitoring/lab"
_KEYWORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
    "Inf",
    "NaN",
}


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (a PromQL tokenizer, enough for topogen's output)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', "''", expr)
    s = re.sub(r"\{[^{}]*\}", "", s)
    s = re.sub(r"\[[^\]]*\]", "", s)
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", s)
    names = set()
    for m in re.finditer(r"(?<![\w.:])[a-zA-Z_:][\w:]*", s):
        if m.group(0) in _KEYWORDS or s[m.end() :].lstrip().startswith("("):
            continue
        names.add(m.group(0))
    return names


def exporter_metrics(cfg: TopogenConfig) -> set[str]:
    mon = cfg.monitoring
    names = {v for v in mon.metrics.model_dump().values() if v}
    return names | ({mon.progress_metric} if mon.progress_metric else set())


# --- files ---------------------------------------------------------------------------------


def test_files_and_objects(files: dict[str, RenderedFile]) -> None:
    assert sorted(files) == [
        f"{BASE}/dashboard-configmap.yaml",
        f"{BASE}/dashboard.json",
        f"{BASE}/prometheusrule.yaml",
        f"{BASE}/rules.yaml",
    ]
    assert not files[f"{BASE}/dashboard.json"].header
    assert files[f"{BASE}/rules.yaml"].header and not files[f"{BASE}/rules.yaml"].objects
    (rule,) = files[f"{BASE}/prometheusrule.yaml"].objects
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "topogen"
    (cm,) = files[f"{BASE}/dashboard-configmap.yaml"].objects
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["data"] == {"topogen-lab.json": files[f"{BASE}/dashboard.json"].text}


def test_prometheusrule_holds_the_rule_file_groups(
    files: dict[str, RenderedFile], rules: dict[str, Any]
) -> None:
    (rule,) = files[f"{BASE}/prometheusrule.yaml"].objects
    assert rule["spec"] == rules
    assert [g["name"] for g in rules["groups"]] == ["topogen.lab.ml-training"]


def test_deterministic(
    cluster: ClusterAnalysis, cfg: TopogenConfig, files: dict[str, RenderedFile]
) -> None:
    again = {f.path: f.text for f in render_monitoring(cluster, cfg)}
    assert again == {p: f.text for p, f in files.items()}
    text = files[f"{BASE}/dashboard.json"].text
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_disabled_renders_nothing(cluster: ClusterAnalysis, cfg: TopogenConfig) -> None:
    off = cfg.model_copy(
        update={"monitoring": cfg.monitoring.model_copy(update={"enabled": False})}
    )
    assert render_monitoring(cluster, off) == []


def test_allowlist_documented(files: dict[str, RenderedFile]) -> None:
    flag = '--metric-labels-allowlist="nodes=[topology.kubernetes.io/zone],pods=[app,role]"'
    assert flag in files[f"{BASE}/rules.yaml"].text
    assert flag in files[f"{BASE}/prometheusrule.yaml"].text


def _config_with(monitoring: dict[str, Any]) -> TopogenConfig:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["monitoring"] = monitoring
    return parse_config(data, "topogen.yaml", EXAMPLE.parent)


def test_rule_labels_and_config_keys(cluster: ClusterAnalysis) -> None:
    custom = _config_with(
        {
            "namespace": "observability",
            "ruleLabels": {"release": "kps"},
            "idleGpuUtilisationPercent": 5,
            "idleFor": "30m",
            "rateWindow": "2m",
            "progressMetric": None,
            "policyDropReasons": ["POLICY_DENIED"],
            "metrics": {"gpuUtilisation": "dcgm_gpu_utilization", "flows": None},
        }
    )
    out = {f.path: f for f in render_monitoring(cluster, custom)}
    (rule,) = out[f"{BASE}/prometheusrule.yaml"].objects
    assert rule["metadata"]["namespace"] == "observability"
    assert rule["metadata"]["labels"]["release"] == "kps"
    text = out[f"{BASE}/rules.yaml"].text
    assert "dcgm_gpu_utilization{" in text and "DCGM_FI_DEV_GPU_UTIL" not in text
    assert "hubble_flows_processed_total" not in text and "training_step_total" not in text
    assert "topogen:group_policy_drops:rate2m" in text and "< 5.0" in text
    assert "reason='POLICY_DENIED'" in text
    idle = next(
        r
        for g in yaml.safe_load(text)["groups"]
        for r in g["rules"]
        if r.get("alert") == "TopogenGroupIdle"
    )
    assert idle["for"] == "30m" and "progress" not in idle["expr"]


@pytest.mark.parametrize(
    "bad",
    [
        {"metrics": {"gpuUtilization": "x"}},  # typo: unknown key
        {"metrics": {"gpuUtilisation": "DCGM FI"}},  # not a metric name
        {"progressMetric": "steps{job='x'}"},
        {"idleFor": "15 minutes"},
        {"policyDropReasons": []},
    ],
)
def test_config_rejects(bad: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="monitoring"):
        _config_with(bad)


# --- escaping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("ml-demo", "'ml-demo'"),
        ("it's", r"'it\'s'"),
        ('a"b', "'a\"b'"),
        ("back\\slash", r"'back\\slash'"),
        ("new\nline\x7f", r"'new\x0aline\x7f'"),
        ("ünï", "'ünï'"),
    ],
)
def test_promql_string(value: str, quoted: str) -> None:
    assert promql_string(value) == quoted


def test_regex_quote_matches_literally() -> None:
    hostile = r"a.b|c*(d)[e]{2}^$+?\z"
    assert re.fullmatch(regex_quote(hostile), hostile)
    assert not re.fullmatch(regex_quote("a.b"), "axb")


def test_ksm_label_and_go_text() -> None:
    assert ksm_label("training.kubeflow.org/job-name") == "label_training_kubeflow_org_job_name"
    assert ksm_label("app") == "label_app"
    assert go_text("a {{ .x }} b") == 'a {{ "{{" }} .x }} b'


# --- rules reference only what exists ---------------------------------------------------------


def test_rules_read_exporters_or_earlier_records(rules: dict[str, Any], cfg: TopogenConfig) -> None:
    exporters = exporter_metrics(cfg)
    for group in rules["groups"]:
        recorded: set[str] = set()
        for rule in group["rules"]:
            used = metric_names(rule["expr"])
            assert used, rule
            unknown = used - exporters - recorded
            assert not unknown, f"{rule.get('record') or rule.get('alert')} reads {unknown}"
            if "record" in rule:
                recorded.add(rule["record"])


def test_every_alert_names_group_zones_and_runbook(rules: dict[str, Any]) -> None:
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert [a["alert"] for a in alerts] == [
        "TopogenGroupIdle",
        "TopogenGroupSplitAcrossZones",
        "TopogenGroupPolicyDrops",
        "TopogenGroupPending",
    ]
    for a in alerts:
        desc = a["annotations"]["description"]
        assert "Group ml-training (cluster lab)" in desc
        assert "$labels.training_job" in desc and "Labels.zone" in desc
        assert "zone-a" in desc  # the zone topogen's plan confines the group to
        assert "Runbook: " in desc and "topogen analyze --cluster lab" in desc
        assert a["labels"] == {
            "severity": "warning",
            "topogen_cluster": "lab",
            "topogen_group": "ml-training",
        }


# --- dashboard ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard(files: dict[str, RenderedFile]) -> dict[str, Any]:
    data = json.loads(files[f"{BASE}/dashboard.json"].text)
    assert isinstance(data, dict)
    return data


def test_dashboard_is_valid_grafana_json(dashboard: dict[str, Any]) -> None:
    assert dashboard["schemaVersion"] == DASHBOARD_SCHEMA_VERSION
    assert dashboard["uid"] == "topogen-lab" and len(dashboard["uid"]) <= 40
    assert dashboard["id"] is None and dashboard["title"]
    assert {"from", "to"} <= set(dashboard["time"])
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    cells: set[tuple[int, int]] = set()
    for p in panels:
        assert p["type"] in {"table", "timeseries"} and p["title"]
        g = p["gridPos"]
        assert all(isinstance(g[k], int) for k in ("h", "w", "x", "y"))
        assert g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not mine & cells, f"panel {p['id']} overlaps another"
        cells |= mine
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in p["targets"]]
        assert p["targets"] and len(refs) == len(set(refs))
        for t in p["targets"]:
            assert t["expr"] and t["datasource"] == p["datasource"]
            used = set(re.findall(r"\$(\w+)", t["expr"]))
            assert used <= set(variables), used


def test_dashboard_has_the_pod_table(dashboard: dict[str, Any]) -> None:
    table = dashboard["panels"][0]
    assert table["type"] == "table"
    order = table["transformations"][1]["options"]["indexByName"]
    assert [k for k, _ in sorted(order.items(), key=lambda kv: kv[1])][3:7] == [
        "pod",
        "role",
        "node",
        "zone",
    ]
    titles = {p["title"] for p in dashboard["panels"]}
    assert {"GPU utilisation per job", "Training progress per job"} <= titles


def test_dashboard_queries_only_recorded_or_exporter_series(
    dashboard: dict[str, Any], rules: dict[str, Any], cfg: TopogenConfig
) -> None:
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    alerting = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    known = recorded | exporter_metrics(cfg) | ({"ALERTS"} if alerting else set())
    used: set[str] = set()
    for expr in dashboard_exprs(dashboard):
        names = metric_names(expr)
        assert names, expr
        used |= names
    assert used <= known, used - known
    assert used & recorded == used - {"ALERTS"}  # the dashboard reads only recorded series


def test_dashboard_without_flows_or_progress(cluster: ClusterAnalysis, cfg: TopogenConfig) -> None:
    mon = cfg.monitoring.model_copy(
        update={
            "progress_metric": None,
            "metrics": cfg.monitoring.metrics.model_copy(update={"flows": None}),
        }
    )
    out = {
        f.path: f for f in render_monitoring(cluster, cfg.model_copy(update={"monitoring": mon}))
    }
    dash = json.loads(out[f"{BASE}/dashboard.json"].text)
    titles = {p["title"] for p in dash["panels"]}
    assert "Training progress per job" not in titles and "Cross-zone flows per job" not in titles
    assert all("flows" not in e and "progress" not in e for e in dashboard_exprs(dash))


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = heading.strip().lower()
    return re.sub(r"[^a-z0-9 _-]", "", text).replace(" ", "-")


def test_every_alert_has_a_runbook_url_into_the_runbooks_page(rules: dict[str, Any]) -> None:
    """Each alert's runbook_url is the runbooks page of the documentation site plus the
    alert's section (tests/docs checks the built site has it as an anchor)."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    page = (docs / "runbooks.md").read_text(encoding="utf-8")
    anchors = {_slug(m) for m in re.findall(r"^#{2,4} (.+)$", page, flags=re.M)}
    assert DEFAULT_RUNBOOK_URL.endswith("/docs/runbooks.md")
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert len(alerts) >= 4
    for a in alerts:
        url = a["annotations"]["runbook_url"]
        base, _, fragment = url.partition("#")
        assert base == DEFAULT_RUNBOOK_URL
        assert fragment == a["alert"].lower() and fragment in anchors
        assert f"\n## {a['alert']}\n" in page  # a section of the page itself


def test_runbook_url_is_configurable_and_never_a_template() -> None:
    cfg = _config_with({"runbookUrl": "https://wiki.example/ml/topogen"})
    assert cfg.monitoring.runbook_url == "https://wiki.example/ml/topogen"
    for bad in ("https://x/{{ $labels.pod }}", "ftp://x", "https://x/#anchor"):
        with pytest.raises(InputError, match="runbookUrl"):
            _config_with({"runbookUrl": bad})
