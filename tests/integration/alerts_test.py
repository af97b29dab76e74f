#!/usr/bin/env python3
"""docs/alerts.yml and docs/grafana-dashboard.json are valid and name real metrics.

usage: alerts_test.py

`promtool check rules` and `promtool test rules` (tests/integration/
alerts_rules_test.yml) on the rules (Debian package prometheus provides
promtool; exit 77, skipped, without it), and every rule has a case there in
which it fires. Every gossipgw_* and process_* metric either file names is a
family in docs/metrics.md (the live output is checked against that list by
control_api_test.py), so a renamed metric cannot silently disable an alert
or empty a panel.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import gwtest
from gwtest import check

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
rules = os.path.join(root, "docs", "alerts.yml")
dashboard = os.path.join(root, "docs", "grafana-dashboard.json")
documented = set(re.findall(r"^\| `((?:gossipgw|process)_[a-z0-9_]+)`",
                            open(os.path.join(root, "docs", "metrics.md")).read(), re.M))
metric_re = r"\b(?:gossipgw|process)_[a-z0-9_]+"

promtool = shutil.which("promtool")
if promtool is None:
    print("promtool not installed (Debian package prometheus; scripts/setup-deps.sh): skipped")
    sys.exit(77)

r = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True)
check("promtool check rules docs/alerts.yml", r.returncode == 0, r.stdout + r.stderr)
r = subprocess.run([promtool, "test", "rules", "alerts_rules_test.yml"], cwd=here, capture_output=True, text=True)
check("promtool test rules: the alerts fire where they should", r.returncode == 0, r.stdout + r.stderr)

# Every rule is tested firing: an eval whose exp_alerts lists at least one alert.
rule_names = re.findall(r"^\s*- alert: (\w+)", open(rules).read(), re.M)
cases = re.split(r"^\s*- eval_time:", open(os.path.join(here, "alerts_rules_test.yml")).read(), flags=re.M)[1:]
fired = {m.group(1) for c in cases if "exp_labels" in c for m in [re.search(r"alertname: (\w+)", c)] if m}
check("every rule of docs/alerts.yml has a promtool case where it fires", rule_names and set(rule_names) <= fired,
      str(sorted(set(rule_names) - fired)))

# The expressions (one line or folded over several).
exprs_text, in_expr = [], False
for ln in open(rules).read().splitlines():
    if ln.strip().startswith("expr:"):
        exprs_text.append(ln)
        in_expr = ln.strip().endswith(">-")
    elif in_expr and ln.startswith(" " * 10):
        exprs_text.append(ln)
    else:
        in_expr = False
named = set(re.findall(metric_re, "\n".join(exprs_text)))
check("alerts: every metric is documented", named and named <= documented, str(sorted(named - documented)))

dash = json.load(open(dashboard))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
check("dashboard: panels with queries", len(dash["panels"]) >= 8 and all(exprs), str(len(dash["panels"])))
ids = [p["id"] for p in dash["panels"]]
check("dashboard: distinct panel ids", len(ids) == len(set(ids)), str(ids))
named = set(re.findall(metric_re, "\n".join(exprs)))
check("dashboard: every metric is documented", named <= documented, str(sorted(named - documented)))
gwtest.finish()
