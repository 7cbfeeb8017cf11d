"""Reads a JUnit file as CI consumers do and prints what they saw, as JSON.

junitparser (https://pypi.org/project/junitparser/) is the parser
test-report actions and many CI plugins build on; junit2html renders the
report and its matrix view, which crashed on testcases without `time`.
Usage: read_junit.py REPORT.xml OUT_DIR
"""

import json
import os
import sys

from junit2htmlreport import runner as junit2html
from junitparser import Error, Failure, JUnitXml, Properties, Skipped


def properties(node):
    """A suite's or a testcase's <properties> (junitparser reads both)."""
    props = node.child(Properties)
    return {} if props is None else {p.name: p.value for p in props}


def result_of(case):
    for result in case.result:
        if isinstance(result, Failure):
            return {"kind": "failure", "message": result.message,
                    "type": result.type, "text": result.text or ""}
        if isinstance(result, Error):
            return {"kind": "error", "message": result.message}
        if isinstance(result, Skipped):
            return {"kind": "skipped", "message": result.message}
    return {"kind": "passed"}


def main():
    path, out = sys.argv[1], sys.argv[2]
    xml = JUnitXml.fromfile(path)
    suites = []
    for suite in xml:
        suites.append({
            "name": suite.name,
            "tests": suite.tests,
            "failures": suite.failures,
            "skipped": suite.skipped,
            "time": suite.time,
            "properties": properties(suite),
            "cases": [{
                "name": case.name,
                "classname": case.classname,
                "time": case.time,
                "properties": properties(case),
                "result": result_of(case),
            } for case in suite],
        })
    # junit2html: the page, the HTML matrix and the text matrix (which
    # prints; stdout is the JSON, so it goes to stderr).
    junit2html.run([path, os.path.join(out, "junit2html.html")])
    junit2html.run(["--report-matrix", os.path.join(out, "matrix.html"), path])
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        junit2html.run(["--summary-matrix", path])
    finally:
        sys.stdout = stdout
    json.dump({"suites": suites}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
