"""Shared helpers for the integration tests (run as scripts by meson).

check() records and prints one assertion; finish() prints the count and
exits non-zero on any failure. wait_for() polls a condition with a deadline
(protocol bounds, never a fixed sleep). ctl()/ctl_json() run gossipctl
against a gateway's control socket.
"""
import json
import subprocess
import sys
import time

failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)
    if not cond:
        failures.append(name)
    return cond


def finish():
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


def wait_for(what, pred, timeout=30.0, interval=0.05):
    """Returns pred()'s first truthy value; TimeoutError (with the last value
    or error seen) once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except (OSError, RuntimeError, ValueError) as e:
            last = e
        time.sleep(interval)
    raise TimeoutError(f"{what}: {last}")


def ctl(gossipctl, *args, sock):
    return subprocess.run([gossipctl, *args, "--socket", sock], capture_output=True, text=True, timeout=60)


def ctl_json(gossipctl, *args, sock):
    r = ctl(gossipctl, *args, "--json", sock=sock)
    if r.returncode != 0:
        raise RuntimeError(f"gossipctl {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def key_id(gossipctl, path):
    r = subprocess.run([gossipctl, "keyid", path], capture_output=True, text=True, check=True)
    return r.stdout.split()[-1]
