#!/usr/bin/env python3
"""Runs probe and Schemathesis against one API for the same time and prints, side by side,
how many operations each got a 2xx answer from and how many requests each sent.

Not a test: a measurement for people comparing the tools (issue "Resources"). The API must
already run on 127.0.0.1; Schemathesis comes from PyPI (`pip install schemathesis`).

    python3 scripts/compare-with-schemathesis.py --spec kinto-api.json \
        --url http://127.0.0.1:8888/v1 --seconds 60 --basic user:pass \
        --probe target/release/probe --schemathesis venv/bin/schemathesis

Operations are counted from probe's report.json and from the HAR file Schemathesis writes,
whose URLs are matched against the document's path templates.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def load_document(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        import yaml  # only for YAML documents

        return yaml.safe_load(text)


def templates(document):
    """(method, template, regex) for each operation of the document."""
    out = []
    for path, item in (document.get("paths") or {}).items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "/?$"
        for method in item:
            if method in METHODS:
                out.append((method.upper(), path, re.compile(pattern)))
    # Literal segments win over parameters: longer literal text first.
    out.sort(key=lambda t: -len(re.sub(r"\{[^}]+\}", "", t[1])))
    return out


def run_probe(binary, spec, url, seconds, basic, workdir, exclude_tags):
    report = os.path.join(workdir, "probe-report.json")
    cmd = [binary, "run", "--spec", spec, "--url", url, "--budget", f"{seconds}s",
           "--seed", "1", "--store", os.path.join(workdir, "store"), "--report", report]
    if basic:
        cmd += ["--basic", basic]
    for tag in exclude_tags:
        cmd += ["--exclude", tag]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, PROBE_NO_PROGRESS="1"))
    took = time.time() - started
    with open(report, encoding="utf-8") as f:
        data = json.load(f)
    ops = sum(1 for op in data["operations"] if op["statuses"].get("2xx", 0) > 0)
    return {"requests": data["totals"]["requests"], "ops_2xx": ops,
            "operations": data["totals"]["operations_tried"], "seconds": took,
            "exit": proc.returncode}


def run_schemathesis(binary, spec, url, seconds, basic, workdir, document, exclude_tags):
    har = os.path.join(workdir, "schemathesis.har")
    cmd = [binary, "run", spec, "--url", url, "--max-time", str(seconds),
           "--report", "har", "--report-har-path", har, "--no-color"]
    if basic:
        cmd += ["--auth", basic]
    for tag in exclude_tags:
        cmd += ["--exclude-tag", tag]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    took = time.time() - started
    base_path = urllib.parse.urlparse(url).path.rstrip("/")
    known = templates(document)
    requests, reached = 0, set()
    try:
        with open(har, encoding="utf-8") as f:
            entries = json.load(f)["log"]["entries"]
    except (OSError, KeyError, json.JSONDecodeError):
        entries = []
    for e in entries:
        requests += 1
        status = e["response"]["status"]
        path = urllib.parse.urlparse(e["request"]["url"]).path
        if base_path and path.startswith(base_path):
            path = path[len(base_path):] or "/"
        method = e["request"]["method"].upper()
        for m, template, regex in known:
            if m == method and regex.match(path):
                if 200 <= status < 300:
                    reached.add((m, template))
                break
    return {"requests": requests, "ops_2xx": len(reached), "seconds": took,
            "exit": proc.returncode}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--basic")
    p.add_argument("--probe", default="target/release/probe")
    p.add_argument("--schemathesis", default="schemathesis")
    p.add_argument("--reset", help="a shell command run before each tool (restarts the API)")
    p.add_argument("--exclude-tag", action="append", default=[],
                   help="leave out the operations of a tag, in both tools (e.g. the ones that "
                        "change the credentials the tools log in with)")
    a = p.parse_args()
    host = urllib.parse.urlparse(a.url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("compare only against an API on loopback")
    document = load_document(a.spec)
    with tempfile.TemporaryDirectory() as workdir:
        if a.reset:
            subprocess.run(a.reset, shell=True, check=True)
        probe = run_probe(a.probe, a.spec, a.url, a.seconds, a.basic, workdir, a.exclude_tag)
        if a.reset:
            subprocess.run(a.reset, shell=True, check=True)
        st = run_schemathesis(a.schemathesis, a.spec, a.url, a.seconds, a.basic, workdir,
                              document, a.exclude_tag)
    print(f"{'':24}{'probe':>12}{'schemathesis':>14}")
    print(f"{'operations answered 2xx':24}{probe['ops_2xx']:>12}{st['ops_2xx']:>14}"
          f"   (of {probe['operations']})")
    print(f"{'requests':24}{probe['requests']:>12}{st['requests']:>14}")
    print(f"{'wall time (s)':24}{probe['seconds']:>12.1f}{st['seconds']:>14.1f}")
    print(f"{'exit code':24}{probe['exit']:>12}{st['exit']:>14}")


if __name__ == "__main__":
    main()
