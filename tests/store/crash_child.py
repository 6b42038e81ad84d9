"""Child process of the crash test: appends with sync flush and prints each acknowledged entry
(`qid queue_offset count phys crc len`) only after `flush()` returned, until it is killed."""
import os
import random
import sys
import zlib

import store
from store import Message

CONFIG = store.StoreConfig(commitlog_file_size=256 * 1024, cq_units_per_file=64, index_slots=128,
                           index_entries=512, flush="sync")


def main(path: str, seed: int) -> None:
    rnd = random.Random(seed)
    s = store.open(path, CONFIG)
    out = os.fdopen(1, "w", buffering=1)
    out.write("ready\n")
    while True:
        msgs = []
        for _ in range(rnd.randint(1, 4)):
            body = rnd.randbytes(rnd.choice([0, 10, 100, 1000, 5000]))
            n = rnd.choice([1, 1, 1, 3])
            msgs.append(Message("crash", rnd.randint(0, 2), body, {"KEYS": f"k{rnd.randint(0, 99)}"},
                                batch_count=n))
        results = s.append_many(msgs)
        s.flush()
        for m, r in zip(msgs, results):
            out.write(f"{m.queue_id} {r.queue_offset} {r.count} {r.physical_offset} "
                      f"{zlib.crc32(m.body)} {len(m.body)}\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
