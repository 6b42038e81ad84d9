"""The stored/pulled message layout: the one implementation lives in `store.message`."""
from store.message import *  # noqa: F401,F403
from store.message import decode, encode  # noqa: F401
