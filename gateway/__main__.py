"""`python -m gateway`: start the rocketgate server (with --shards N > 1: the shards' supervisor)."""
import sys

from gateway.config import parse_args
from gateway.heap import pin_mmap_threshold
from gateway.server import main

if __name__ == "__main__":
    config = parse_args()
    if config.shards > 1:
        from gateway.shards import main as supervise
        sys.exit(supervise(config, sys.argv[1:]))
    pin_mmap_threshold()
    sys.exit(main(config))
