"""`python -m gateway`: start the rocketgate server."""
import sys

from gateway.config import parse_args
from gateway.server import main

if __name__ == "__main__":
    sys.exit(main(parse_args()))
