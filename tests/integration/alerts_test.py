#!/usr/bin/env python3
"""docs/alerts.yml and docs/grafana-dashboard.json are valid and name real metrics.

usage: alerts_test.py

`promtool check rules` and `promtool test rules` (tests/integration/
alerts_rules_test.yml) on the rules (Debian package prometheus provides
promtool; exit 77, skipped, without it). Every gossipgw_* metric either file
names is a family in docs/metrics.md (the live output is checked against that
list by control_api_test.py), so a renamed metric cannot silently disable an
alert or empty a panel.
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
documented = set(re.findall(r"^\| `(gossipgw_[a-z0-9_]+)`", open(os.path.join(root, "docs", "metrics.md")).read(), re.M))

promtool = shutil.which("promtool")
if promtool is None:
    print("promtool not installed (Debian package prometheus; scripts/setup-deps.sh): skipped")
    sys.exit(77)

r = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True)
check("promtool check rules docs/alerts.yml", r.returncode == 0, r.stdout + r.stderr)
r = subprocess.run([promtool, "test", "rules", "alerts_rules_test.yml"], cwd=here, capture_output=True, text=True)
check("promtool test rules: the alerts fire where they should", r.returncode == 0, r.stdout + r.stderr)

named = set(re.findall(r"gossipgw_[a-z0-9_]+", "\n".join(
    ln for ln in open(rules).read().splitlines() if ln.strip().startswith("expr:"))))
check("alerts: every metric is documented", named and named <= documented, str(sorted(named - documented)))

dash = json.load(open(dashboard))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
check("dashboard: panels with queries", len(dash["panels"]) >= 8 and all(exprs), str(len(dash["panels"])))
ids = [p["id"] for p in dash["panels"]]
check("dashboard: distinct panel ids", len(ids) == len(set(ids)), str(ids))
named = set(re.findall(r"gossipgw_[a-z0-9_]+", "\n".join(exprs)))
check("dashboard: every metric is documented", named <= documented, str(sorted(named - documented)))
gwtest.finish()
