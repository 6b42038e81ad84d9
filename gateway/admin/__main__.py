import sys

from gateway.admin.cli import main

if __name__ == "__main__":
    sys.exit(main())
