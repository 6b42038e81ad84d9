"""What one suite run yields: per test a status and, when it did not pass, a one-line reason."""
from __future__ import annotations

import dataclasses

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclasses.dataclass
class SuiteRun:
    """One suite against one system; `error` is set when the suite itself could not run there."""
    suite: str
    system: str
    results: dict = dataclasses.field(default_factory=dict)   # test name -> (status, reason)
    error: str = ""
    seconds: float = 0.0

    def add(self, test: str, status: str, reason: str = "") -> None:
        self.results[test] = (status, one_line(reason))

    def count(self, status: str) -> int:
        return sum(1 for s, _ in self.results.values() if s == status)


def one_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of `text`, shortened for a table cell (pipes escaped)."""
    line = next((x.strip() for x in str(text).splitlines() if x.strip()), "")
    line = line.replace("|", "\\|")
    return line if len(line) <= limit else line[:limit - 1] + "…"
