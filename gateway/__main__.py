"""`python -m gateway`: start the rocketgate server (with --shards N > 1: the shards' supervisor)."""
import atexit
import os
import sys
import threading

from gateway.config import parse_args
from gateway.heap import pin_mmap_threshold
from gateway.server import main


def exit_now(status: int) -> None:
    """Exit without the interpreter's teardown of ~1200 modules (0.3-1 s of CPU per stop, and the
    test suite stops gateways 1000+ times): by now the store is closed and flushed. The atexit
    handlers (logging's flush, temporary dirs) still run; a live non-daemon thread gets the normal exit."""
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    config = parse_args()
    if config.shards > 1:
        from gateway.shards import main as supervise
        exit_now(supervise(config, sys.argv[1:]))
    pin_mmap_threshold()
    exit_now(main(config))
