#!/usr/bin/env python3
"""Prints the gateway's counters next to gossipgen's ground truth.

usage: verdict_table.py TRUTH.json STATS.json
Exit status 1 if any counter differs from the ground truth.
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1]) as f:
        truth = json.load(f)
    with open(sys.argv[2]) as f:
        stats = json.load(f)
    expected = truth["expected"]
    totals = stats["totals"]
    rows = [k for k in totals if k == "rx_total" or k == "accepted" or k.startswith("drop_")]
    msgs = [k for k in totals if k.startswith("msg_")]
    bad = 0

    def table(title, keys):
        nonlocal bad
        print(f"\n{title:<24} {'expected':>10} {'counted':>10}")
        print("-" * 46)
        for k in keys:
            e = expected.get(k, 0)
            g = totals.get(k, 0)
            mark = "" if e == g else "   <-- differs"
            bad += e != g
            print(f"{k:<24} {e:>10} {g:>10}{mark}")

    table("verdict", rows)
    table("message (control lcore)", msgs)
    print("\naccepted by class: " + ", ".join(f"{c} {n}" for c, n in stats["classes"].items()))
    print("generated kinds:   " + ", ".join(f"{k} {n}" for k, n in truth["kinds"].items() if n))
    if bad:
        print(f"\n{bad} counter(s) differ from the ground truth")
        sys.exit(1)
    print("\nevery packet got exactly the verdict the generator intended")


if __name__ == "__main__":
    main()
