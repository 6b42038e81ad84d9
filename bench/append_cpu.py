"""`python -m bench.append_cpu --trees BEFORE,AFTER [--rounds R]`: thread CPU µs per message of
Store.append_many in process (20 000 messages of 128 B with a UNIQ_KEY, TAGS and WAIT, as a RocketMQ
send stores them, in batches of 32), each checkout in its own process, alternating the order round by
round; prints the medians and the per-round ratio of the last tree to the first. The store side of
a send (encoding, CommitLog write, ConsumeQueue and IndexFile dispatch) without the network, so it
moves far less with the machine's load than the end-to-end rows of bench.profile_paths."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from bench.profile_paths import _spread
from bench.rounds import order

CHILD = """
import os, shutil, sys, tempfile, time, uuid
sys.path.insert(0, os.getcwd())
import store
d = tempfile.mkdtemp(prefix="append-cpu-")
try:
    s = store.open(d, store.StoreConfig())
    n = 20000
    msgs = [store.Message("TopicTest", i % 4, b"x" * 128, {"UNIQ_KEY": uuid.uuid4().hex.upper() + "0000",
                                                          "WAIT": "true", "TAGS": "TagA"}) for i in range(n)]
    t = time.thread_time()
    for i in range(0, n, 32):
        s.append_many(msgs[i:i + 32])
    print((time.thread_time() - t) * 1e6 / n)
    s.close()
finally:
    shutil.rmtree(d)
"""


def one(tree: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=tree, capture_output=True, text=True, timeout=300,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    per_round: dict[str, dict[int, float]] = {t: {} for t in trees}
    for i in range(args.rounds):
        for tree in order(i, tuple(trees)):
            per_round[tree][i] = one(tree)
            print(f"round {i + 1} {os.path.basename(tree)}: {per_round[tree][i]:.2f} CPU µs/msg", flush=True)
    for tree in trees:
        print(f"{os.path.basename(tree)}: {_spread(list(per_round[tree].values()), 2)} CPU µs/msg")
    first, last = per_round[trees[0]], per_round[trees[-1]]
    print(f"per-round ratio {os.path.basename(trees[-1])}/{os.path.basename(trees[0])}: "
          f"{_spread([last[i] / first[i] for i in first], 2)}")


if __name__ == "__main__":
    main()
