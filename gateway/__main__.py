"""`python -m gateway`: start the rocketgate server."""
import sys

from gateway.config import parse_args
from gateway.heap import pin_mmap_threshold
from gateway.server import main

if __name__ == "__main__":
    pin_mmap_threshold()
    sys.exit(main(parse_args()))
