"""Results of a bench run: medians, spreads and ratios, rendered as Markdown and a matplotlib chart
into docs/performance.md and docs/img/performance.png (sections no run writes, such as "## Store", are kept as found)."""
from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import sys

from bench import limits, rounds
from bench.page_text import INTRO, METHOD, SEQUENTIAL_NOTE, STORE_PLACEHOLDER, USAGE
from bench.brokers import ROOT

DOC = os.path.join(ROOT, "docs", "performance.md")
REFERENCES = ("kafka", "rocketmq")
LOWER_IS_BETTER = ("ms", "MiB", "s")


median = rounds.median


def fmt(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def size(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB"


class Results:
    """rows[(scenario, metric)] = {system: [values]}; n/a reasons per (scenario, system). Scenarios in
    `paired` were run in interleaved rounds: value i of every system is from round i, and the ratio
    subject / reference is the median of the per-round ratios (bench.rounds), with a verdict."""

    def __init__(self, subject: str = "gateway", references: tuple[str, ...] = REFERENCES):
        self.subject, self.references = subject, tuple(references)
        self.paired: set[str] = set()
        self.rows: dict[tuple[str, str], dict[str, list[float]]] = {}
        self.better: dict[tuple[str, str], str] = {}
        self.reasons: dict[tuple[str, str], str] = {}
        self.system_reasons: dict[str, str] = {}
        self.kafka_reasons: dict[str, str] = {}

    def add(self, scenario: str, metric: str, system: str, value: float, better: str | None = None) -> None:
        self.rows.setdefault((scenario, metric), {}).setdefault(system, []).append(float(value))
        if better or (scenario, metric) not in self.better:
            self.better[(scenario, metric)] = better or (
                "lower" if metric.split()[-1] in LOWER_IS_BETTER else "higher")

    def na(self, scenario: str, system: str, reason: str) -> None:
        self.reasons.setdefault((scenario, system), reason)

    def na_all_kafka(self, system: str, reason: str) -> None:
        self.kafka_reasons[system] = reason

    def failed_start(self, system: str, reason: str) -> None:
        self.system_reasons[system] = "failed to start: " + " ".join(reason.split())[:300]

    def _reason(self, scenario: str, system: str) -> str:
        r = self.reasons.get((scenario, system))
        if r is None and "native" not in scenario:
            r = self.kafka_reasons.get(system)
        return r or self.system_reasons.get(system) or "not run"

    def _cell(self, scenario: str, metric: str, system: str) -> str:
        vals = self.rows.get((scenario, metric), {}).get(system)
        if not vals:
            return f"n/a ({_short(self._reason(scenario, system))})"
        if len(vals) == 1:
            return f"{fmt(vals[0])} (n=1)"
        return f"{fmt(median(vals))} ({fmt(min(vals))}–{fmt(max(vals))})"

    def compare(self, scenario: str, metric: str, ref: str) -> rounds.Comparison | None:
        """The per-round comparison subject / ref of a paired scenario, else None."""
        by_system = self.rows.get((scenario, metric), {})
        g, rv = by_system.get(self.subject), by_system.get(ref)
        if scenario not in self.paired or not g or not rv or len(g) != len(rv):
            return None
        return rounds.compare(rounds.per_round_ratios(g, rv), self.better[(scenario, metric)], self.subject, ref)

    def comparisons(self):
        """(scenario, metric, reference, ratio or None, Comparison or None) per table row: the median of
        the per-round ratios for paired scenarios, else the ratio of the medians."""
        for (scenario, metric), by_system in self.rows.items():
            refs = [r for r in self.references if r in by_system or (scenario, r) in self.reasons]
            if not refs:  # the reference never ran this row (e.g. it failed to start): say which
                refs = [self._default_reference(scenario)]
            for ref in refs:
                cmp = self.compare(scenario, metric, ref)
                g, rv = by_system.get(self.subject), by_system.get(ref)
                ratio = cmp.median if cmp else (median(g) / median(rv) if g and rv and median(rv) else None)
                yield scenario, metric, ref, ratio, cmp

    def _default_reference(self, scenario: str) -> str:
        if len(self.references) == 1:
            return self.references[0]
        return "rocketmq" if "native" in scenario else "kafka"

    def markdown(self) -> str:
        s = self.subject
        lines = [f"| scenario | metric | reference | reference: median (min–max) | {s}: median (min–max) "
                 f"| {s} / reference: median of rounds (min–max; CI of the median) | verdict |", "|---|---|---|---|---|---|---|"]
        for scenario, metric, ref, ratio, cmp in self.comparisons():
            ref_cell = self._cell(scenario, metric, ref) if ref else "—"
            lines.append(f"| {scenario} | {metric} | {ref or '—'} | {ref_cell} | "
                         f"{self._cell(scenario, metric, s)} | {ratio_cell(ratio, cmp)} | "
                         f"{cmp.verdict if cmp else '—'} |")
        # scenarios where no system produced a number still get a line, with the reasons
        seen = {s for s, _ in self.rows}
        for (scenario, system) in self.reasons:
            if scenario not in seen:
                seen.add(scenario)
                cells = "; ".join(f"{sy}: {_short(r)}" for (sc, sy), r in self.reasons.items() if sc == scenario)
                lines.append(f"| {scenario} | — | — | n/a | n/a | — ({cells}) | — |")
        return "\n".join(lines)

    def chart(self, path: str) -> bool:
        """Horizontal bars of gateway / reference per row (log scale); green where the gateway is
        better. False when there is no ratio to draw."""
        rows = [(f"{s} · {m} vs {r}", ratio, self.better[(s, m)]) for s, m, r, ratio, _ in self.comparisons()
                if ratio and m not in ("MB/s", "GiB on disk")]  # MB/s: same ratio as rec/s
        if not rows:
            return False
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(11, 0.32 * len(rows) + 1.5))
        labels = [r[0] for r in rows][::-1]
        ratios = [r[1] for r in rows][::-1]
        colors = ["tab:green" if (r >= 1) == (b == "higher") else "tab:red" for _, r, b in rows][::-1]
        ax.barh(labels, [r - 1 for r in ratios], left=1, color=colors)  # bars grow from 1×
        for y, r in enumerate(ratios):
            ax.text(r, y, f" {r:.2f}× ", va="center", ha="left" if r >= 1 else "right", fontsize=7)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        lo, hi = min(ratios + [1.0]), max(ratios + [1.0])
        ax.set_xlim(lo / 2.5, hi * 2.5)
        ax.set_xlabel("gateway / reference (median of per-round ratios; green = gateway better)")
        ax.tick_params(axis="y", labelsize=7)
        fig.tight_layout()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return True

    @classmethod
    def from_json(cls, data: dict) -> "Results":
        r = cls(data.get("subject", "gateway"), tuple(data.get("references", REFERENCES)))
        r.paired.update(data.get("paired", []))
        for row in data["rows"]:
            for system, values in row["values"].items():
                for v in values:
                    r.add(row["scenario"], row["metric"], system, v, row.get("better"))
        for na in data["na"]:
            r.na(na["scenario"], na["system"], na["reason"])
        r.system_reasons.update(data.get("systems_failed", data.get("systems_na", {})))
        r.kafka_reasons.update(data.get("kafka_na", {}))
        return r

    def to_json(self) -> dict:
        return {"rows": [{"scenario": s, "metric": m, "values": v, "better": self.better[(s, m)]}
                         for (s, m), v in self.rows.items()],
                "na": [{"scenario": s, "system": sy, "reason": r} for (s, sy), r in self.reasons.items()],
                "systems_failed": self.system_reasons, "kafka_na": self.kafka_reasons,
                "subject": self.subject, "references": list(self.references), "paired": sorted(self.paired)}


def ratio_cell(ratio: float | None, cmp: rounds.Comparison | None) -> str:
    """`0.93× (0.80–1.01 = 94% CI)` for paired rounds (min–max, and the confidence interval of the
    median where it is narrower), `0.93×` for a ratio of medians, `—` for none."""
    if ratio is None:
        return "—"
    if cmp is None:
        return f"{ratio:.2f}×"
    spread = f"{cmp.low:.2f}–{cmp.high:.2f}"
    if (cmp.ci_low, cmp.ci_high) == (cmp.low, cmp.high):
        return f"{ratio:.2f}× ({spread} = {cmp.coverage:.0%} CI)"
    return f"{ratio:.2f}× ({spread}; {cmp.coverage:.0%} CI {cmp.ci_low:.2f}–{cmp.ci_high:.2f})"


def _short(text: str, n: int = 140) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= n else text[:n] + "…"


def _cmd(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def _pom_versions() -> dict:
    with open(os.path.join(ROOT, "bench", "java", "pom.xml")) as f:
        text = f.read()
    return dict(re.findall(r"<(kafka|rocketmq)\.version>([^<]+)<", text))


def machine(plan: str, elapsed: float) -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    java = _cmd(["java", "-version"])
    import confluent_kafka

    v = _pom_versions()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "plan": plan, "elapsed_s": round(elapsed),
        "cpu": f"{cpu}, {os.cpu_count()} cores", "memory": f"{mem_kb / 2**20:.0f} GiB",
        "os": f"{platform.system()} {platform.release()}", "python": sys.version.split()[0],
        "java": java.splitlines()[0] if java else "?",
        "kafka": v.get("kafka", "?"), "rocketmq": v.get("rocketmq", "?"),
        "librdkafka": confluent_kafka.libversion()[0],
    }


PLANS = ("full", "quick", "partitions")


def _section(old: str, heading: str) -> str | None:
    """The text of `## heading...` up to the next `## ` heading, or None."""
    m = re.search(rf"^## {re.escape(heading)}.*?(?=^## |\Z)", old, flags=re.S | re.M)
    return m.group(0).rstrip() + "\n" if m else None


def run_section(results: Results, meta: dict, img_rel: str | None) -> str:
    m = meta
    text = (f"## Latest run ({m['plan']} plan)\n\n{m['date']}, {m['elapsed_s']} s. Machine: {m['cpu']}, "
            f"{m['memory']} RAM, {m['os']}; Python {m['python']}, {m['java']}; Apache Kafka {m['kafka']}, "
            f"Apache RocketMQ {m['rocketmq']}, librdkafka {m['librdkafka']}.\n\n{results.markdown()}\n")
    lines = limits_lines(results, m.get("limits", {}))
    if lines:
        text += "\n" + "\n".join(f"- {line}" for line in lines) + "\n"
    if img_rel:
        text += f"\n![gateway / reference per scenario, {m['plan']} plan]({img_rel})\n"
    return text


_LOAD = "load average"
# first words of a scenario -> the direction its MB/s counts for (RocketMQ only has the remoting rows)
_DIRECTIONS = {"produce": "produce", "consume": "consume", "native send": "produce", "native consume": "consume"}


def limits_lines(results: Results, measured: dict) -> list[str]:
    """The physical limits measured before/after the run and each system's best MB/s as a share."""
    if not measured:
        return []
    cells = []
    for key in ("disk write MB/s", "loopback MB/s", _LOAD):
        values = [measured[when][key] for when in ("before", "after") if key in measured.get(when, {})]
        if values:
            cells.append(f"{key} " + " / ".join(f"{v:.2f}" if key == _LOAD else f"{v:,.0f}" for v in values))
    out = ["Physical limits and load in this run (before / after the systems): " + "; ".join(cells)]
    best: dict[str, dict[str, float]] = {}
    for (scenario, metric), by_system in results.rows.items():
        direction = _DIRECTIONS.get(" ".join(scenario.split()[:2])) or _DIRECTIONS.get(scenario.split()[0])
        if metric != "MB/s" or not direction:
            continue
        for system, values in by_system.items():
            slot = best.setdefault(system, {})
            slot[direction] = max(slot.get(direction, 0.0), median(values))
    top = {k: max(v[k] for v in measured.values() if k in v) for k in ("disk write MB/s", "loopback MB/s")
           if any(k in v for v in measured.values())}
    return out + limits.shares(top, best)


GENERATED_HEADINGS = ("Latest run (", "How it is measured", "Running it", "Gateway vs gateway")


def _kept_sections(old: str) -> list[str]:
    """The page's own sections that no run writes (Store, Semantics, Spark, ...), in page order."""
    found = re.findall(r"^## .*?(?=^## |\Z)", old, flags=re.S | re.M)
    return [sec.rstrip() + "\n" for sec in found if not sec[3:].startswith(GENERATED_HEADINGS)]


COMPARE_HEADING = "Gateway vs gateway (latest --compare-gateway run)"


def git_head(tree: str) -> str:
    """Short commit of a checkout, `+dirty` if its work tree has changes."""
    try:
        head = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "?"
    if head.returncode != 0:
        return "not a git checkout"
    dirty = _cmd(["git", "-C", tree, "status", "--porcelain", "--untracked-files=no"])
    return head.stdout.strip() + ("+dirty" if dirty and dirty != "?" else "")


def write_compare_section(results: Results, meta: dict, doc: str = DOC) -> None:
    """Replace (or add, before the method) the page's gateway-vs-gateway section; the rest stays."""
    m = meta
    section = (f"## {COMPARE_HEADING}\n\n{m['date']}, {m['elapsed_s']} s, {m['rounds']} rounds. `gateway` is "
               f"this tree ({m['this_head']}), `{results.references[0]}` the checkout {m['other_tree']} "
               f"({m['other_head']}). When both are the same code, every ratio should be 1.0: the spread "
               f"and the verdicts show the noise floor of the method on this machine at that time.\n\n"
               f"{results.markdown()}\n")
    lines = limits_lines(results, m.get("limits", {}))
    if lines:
        section += "\n" + "\n".join(f"- {line}" for line in lines) + "\n"
    old = open(doc).read() if os.path.exists(doc) else INTRO
    found = _section(old, COMPARE_HEADING)
    if found:
        new = old.replace(found, section)
    elif "\n## How it is measured" in old:
        new = old.replace("\n## How it is measured", "\n" + section + "\n## How it is measured", 1)
    else:
        new = old.rstrip() + "\n\n" + section
    with open(doc, "w") as f:
        f.write(new)


def write_docs(results: Results, meta: dict, doc: str = DOC) -> None:
    """Rewrite the page: this run's section replaces the previous run of the same plan; the other
    plan's section and every section no run writes (Store, Semantics, Spark) are kept as found."""
    old = open(doc).read() if os.path.exists(doc) else ""
    plan = meta["plan"]
    img = os.path.join(os.path.dirname(doc), "img", f"performance-{plan}.png")
    sections = {plan: run_section(results, meta, f"img/performance-{plan}.png" if results.chart(img) else None)}
    for other in PLANS:
        if other != plan:
            kept = _section(old, f"Latest run ({other} plan)")
            if kept and "median of rounds" not in kept and SEQUENTIAL_NOTE not in kept:  # sequential method
                heading, rest = kept.split("\n", 1)
                kept = f"{heading}\n\n{SEQUENTIAL_NOTE}\n{rest}"
            if kept:
                sections[other] = kept
    parts = [INTRO] + [sections[p] for p in PLANS if p in sections]
    compare = _section(old, COMPARE_HEADING)
    if compare:
        parts.append(compare)
    parts += [METHOD.format(rounds=meta.get("rounds", 5)), USAGE.format(**meta),
              *(_kept_sections(old) or [STORE_PLACEHOLDER])]
    os.makedirs(os.path.dirname(doc), exist_ok=True)
    with open(doc, "w") as f:
        f.write("\n".join(parts))


def write_marked(doc: str, name: str, text: str, heading: str) -> None:
    """Put `text` between `<!-- name: begin -->` and `<!-- name: end -->` in `doc`, replacing what
    was there; a page without the markers gets them at its end under `heading`."""
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    with open(doc, encoding="utf-8") as f:
        page = f.read()
    block = f"{begin}\n{text}\n{end}"
    if begin in page:
        page = page[:page.index(begin)] + block + page[page.index(end) + len(end):]
    else:
        page = page.rstrip("\n") + f"\n\n{heading}\n\n" + block + "\n"
    with open(doc, "w", encoding="utf-8") as f:
        f.write(page)
