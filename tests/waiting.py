"""Polling with a bound, shared by the test helpers: waiting for a condition is not an assertion on speed."""
from __future__ import annotations

import time


def wait_for(check, timeout: float, what: str, interval: float, error: type[Exception] = AssertionError):
    """check()'s first true value, polled every `interval` s; `error` naming `what` once `timeout` s passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise error(f"timed out waiting for {what}")
        time.sleep(interval)


def until(pred, timeout: float, interval: float):
    """pred()'s first true value, polled every `interval` s; after `timeout`, what one last pred() gives
    (false: the caller's assert fails). pred() is not called again once true (it may consume)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    return pred()
