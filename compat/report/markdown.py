"""docs/compatibility.md from the suite runs kept in docs/compatibility.json (one entry per suite and system,
so suites can be re-run one at a time)."""
from __future__ import annotations

import json
import os

from compat.report.suite import FAIL, PASS, SKIP, SuiteRun

MARK = {PASS: "pass", FAIL: "**FAIL**", SKIP: "skip", None: "—"}


def load(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def store(path: str, runs: list[SuiteRun], meta: dict) -> dict:
    """Merges `runs` into the JSON file (replacing the same suite/system) and returns the whole content."""
    data = load(path)
    for r in runs:
        data.setdefault(r.suite, {"meta": {}, "runs": {}})
        data[r.suite]["runs"][r.system] = {"results": r.results, "error": r.error, "seconds": round(r.seconds, 1)}
        data[r.suite]["meta"].update(meta.get(r.suite, {}))
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
    return data


def _counts(run: dict) -> str:
    statuses = [s for s, _ in run["results"].values()]
    text = f"{statuses.count(PASS)} / {statuses.count(FAIL)} / {statuses.count(SKIP)}"
    return f"{text} (suite error: {run['error']})" if run["error"] else text


def render(data: dict, notes: dict, intro: str) -> str:
    out = [intro, "", "## Summary", "",
           "| suite | system | passed / failed / skipped | fail here, pass on the real broker | seconds |",
           "|---|---|---|---|---|"]
    for suite, entry in data.items():
        reference = next((r for s, r in entry["runs"].items() if s != "gateway"), None)
        for system, run in sorted(entry["runs"].items(), key=lambda kv: kv[0] == "gateway"):
            regressions = "—" if system != "gateway" or reference is None else str(sum(
                1 for t, (s, _) in run["results"].items()
                if s == FAIL and reference["results"].get(t, (None,))[0] == PASS))
            out.append(f"| {suite} | {system} | {_counts(run)} | {regressions} | {run['seconds']} |")
    for suite, entry in data.items():
        runs = entry["runs"]
        reference = next((s for s in runs if s != "gateway"), None)
        out += ["", f"## {suite}", ""]
        out += [f"- {k}: {v}" for k, v in entry["meta"].items()]
        gw = runs.get("gateway", {"results": {}})
        ref = runs.get(reference, {"results": {}}) if reference else {"results": {}}
        failures = [(t, r) for t, (s, r) in sorted(gw["results"].items()) if s == FAIL]
        out += ["", f"Gateway failures ({len(failures)}):" if failures else "No gateway failures.", ""]
        for test, reason in failures:
            ref_status = ref["results"].get(test, (None, ""))[0]
            note = notes.get(suite, {}).get(test)
            out.append(f"- `{test}` (on {reference or 'the real broker'}: {MARK[ref_status]}): {reason}"
                       + (f" — *{note}*" if note else ""))
        out += ["", f"| test | {reference or 'real broker'} | gateway | reason (when not passed) |", "|---|---|---|---|"]
        for test in sorted(set(gw["results"]) | set(ref["results"])):
            g, r = gw["results"].get(test, (None, "")), ref["results"].get(test, (None, ""))
            reason = g[1] if g[0] != PASS else r[1]
            note = notes.get(suite, {}).get(test)
            if note and g[0] != PASS:
                reason = f"{reason} — *{note}*" if reason else f"*{note}*"
            out.append(f"| `{test}` | {MARK[r[0]]} | {MARK[g[0]]} | {reason} |")
    return "\n".join(out) + "\n"
