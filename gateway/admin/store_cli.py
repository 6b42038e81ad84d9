"""`rocketgate store dump|verify|rebuild DATA_DIR`: the offline store tool (store.tool) on the
command line. dump and verify take the data dir's lock shared (they also work on a live gateway's
dir, read-only), rebuild exclusively (a stopped gateway only). Exit codes: 0 fine, 1 damage found,
2 usage, 3 the data dir is locked by a gateway."""
from __future__ import annotations

import argparse
import json
import os
import sys

from store.tool import dump, rebuild, verify


class Locked(Exception):
    """rebuild found the data dir locked by a gateway (exit 3)."""


class LiveRead:
    """Stands for the lock dump and verify could not take: a gateway is running on the dir."""


def _lock(data_dir: str, shared: bool):
    """The data-dir lock (store/lock.py): shared for dump and verify, which also read a live
    gateway's dir (its exclusive lock then refuses ours: we go on read-only, saying so);
    exclusive for rebuild, which a running gateway refuses. Returns the held lock (keep it),
    LiveRead (verify then reads the tail as being written) or None. Until store/lock.py is merged
    this takes no lock."""
    try:
        from store import lock  # noqa: PLC0415 - store/lock.py comes with the data-dir lock issue
    except ImportError:
        return None
    try:
        return lock.acquire(data_dir, shared=shared, what="rocketgate store")
    except OSError as exc:  # no lock file can be made: a read-only copy can still be read
        if not shared:
            raise Locked(f"cannot lock {data_dir}: {exc}") from None
        return None
    except lock.DataDirLocked as exc:
        if not shared:
            raise Locked(str(exc)) from None
        holder = getattr(exc, "holder", None) or "another process"
        sys.stderr.write(f"rocketgate store: {data_dir} is in use by {holder}: reading it live, read-only "
                         "(it may change meanwhile)\n")
        return LiveRead()


def add_commands(nouns, command, parser_class) -> None:
    verbs = nouns.add_parser("store", help="dump, verify or rebuild a data dir's files (offline tool)"
                             ).add_subparsers(dest="verb", required=True, parser_class=parser_class)

    def common(p):
        p.add_argument("data_dir", help="the gateway's --data-dir")
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
        p.add_argument("--commitlog-file-size", type=int, default=None,
                       help="the gateway's --commitlog-file-size (default: from the file names)")
        p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        p.set_defaults(store=True)
        return p

    d = common(command(verbs, "dump", run_dump, "entries of a CommitLog range or of one queue"))
    d.add_argument("--start", type=int, help="first CommitLog offset (default: the first entry)")
    d.add_argument("--end", type=int, help="CommitLog offset to stop before")
    d.add_argument("--topic", help="dump this topic's queue (with --queue) instead of a CommitLog range")
    d.add_argument("--queue", type=int, default=0, help="queue id (Kafka partition), with --topic")
    d.add_argument("--offset", type=int, help="first queue offset, with --topic")
    d.add_argument("--count", type=int, help="at most this many units, with --topic")
    d.add_argument("--print-data-log", action="store_true", help="also bodies, properties, keys and values")
    d.add_argument("--deep-iteration", action="store_true", help="the records inside inner batches")
    v = common(command(verbs, "verify", run_verify, "check CRCs, magic and every derived file against the CommitLog"))
    v.add_argument("--index-slots", type=int, default=5_000_000, help="the gateway's --index-slots")
    r = common(command(verbs, "rebuild", run_rebuild, "rebuild ConsumeQueues and IndexFiles from the CommitLog "
                                                      "(the gateway must be stopped)"))
    r.add_argument("--index-slots", type=int, default=5_000_000, help="the gateway's --index-slots")
    r.add_argument("--index-entries", type=int, default=20_000_000, help="the gateway's --index-entries")
    r.add_argument("--allow-cut", action="store_true",
                   help="rebuild even when the CommitLog is damaged before its tail (it is cut there, "
                        "as recovery does: the entries after the damage are lost)")


def _missing(data_dir: str) -> bool:
    if os.path.isdir(os.path.join(data_dir, "commitlog")):
        return False
    sys.stderr.write(f"rocketgate: error: {data_dir} is not a data dir (no commitlog/ in it)\n")
    return True


def _progress(args):
    return None if args.quiet else sys.stderr


def run_dump(args) -> int:
    if _missing(args.data_dir):
        return 1
    held = _lock(args.data_dir, True)  # noqa: F841 - held until the command returns
    if args.topic is not None:
        items = dump.queue(args.data_dir, args.topic, args.queue, args.offset, args.count, args.print_data_log,
                           args.deep_iteration, args.commitlog_file_size or 1 << 30)
    else:
        items = dump.commitlog_range(args.data_dir, args.start, args.end, args.print_data_log, args.deep_iteration,
                                     None, args.commitlog_file_size or 1 << 30)
    out = sys.stdout
    try:
        for item in items:
            out.write((json.dumps(item, ensure_ascii=False) if args.json else _line(item)) + "\n")
    except LookupError as exc:
        sys.stderr.write(f"rocketgate: error: {exc.args[0]}\n")
        return 1
    return 0


def _line(item: dict, indent: str = "") -> str:
    """key: value pairs on one line, kafka-dump-log style; records of an inner batch indented below."""
    nested = item.get("records")
    parts = [f"{k}: {json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v}"
             for k, v in item.items() if k != "records"]
    text = indent + " ".join(parts)
    if isinstance(nested, list):
        text += "".join("\n" + _line(r, indent + "| ") for r in nested)
    elif nested is not None:
        text += f"\n{indent}| {nested}"
    return text


def run_verify(args) -> int:
    if _missing(args.data_dir):
        return 1
    held = _lock(args.data_dir, True)  # held until the command returns
    report = verify.verify(args.data_dir, _progress(args), args.commitlog_file_size or 1 << 30, args.index_slots,
                           live=isinstance(held, LiveRead))
    if args.json:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        for d in report["damage"]:
            sys.stdout.write(f"DAMAGE {d['where']}: {d['what']}\n")
        for note in report["notes"]:
            sys.stdout.write(f"note: {note}\n")
        counts = ", ".join(f"{v} {k}" for k, v in report["counts"].items())
        verdict = "OK" if report["ok"] else f"DAMAGED ({len(report['damage'])} problems)"
        sys.stdout.write(f"{verdict}: {counts}; {report['commitlog']['bytes'] / 1e6:,.1f} MB in "
                         f"{report['seconds']} s ({report['mb_per_s']} MB/s)\n")
    return 0 if report["ok"] else 1


def run_rebuild(args) -> int:
    if _missing(args.data_dir):
        return 1
    try:
        held = _lock(args.data_dir, False)  # noqa: F841 - held until the command returns
    except Locked as exc:
        sys.stderr.write(f"rocketgate: error: {exc}\n")
        return 3
    try:
        report = rebuild.rebuild(args.data_dir, _progress(args), args.commitlog_file_size, args.index_slots,
                                 args.index_entries, args.allow_cut)
    except rebuild.RebuildRefused as exc:
        sys.stderr.write(f"rocketgate: error: {exc}\n")
        return 1
    if args.json:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        sys.stdout.write(f"rebuilt {report['consume_queues']} ConsumeQueues and {report['index_files']} IndexFiles "
                         f"from {report['entries']} entries ({report['commitlog_bytes'] / 1e6:,.1f} MB) in "
                         f"{report['seconds']} s\n")
        if report["cut_at"] is not None:
            sys.stdout.write(f"the CommitLog was cut at {report['cut_at']} (damage from there on)\n")
    return 0
