"""The session timer both Kafka group coordinators (classic and KIP-848) run as an App service."""
from __future__ import annotations

import logging
from typing import Callable

import trio

log = logging.getLogger(__name__)


async def expire_every(tick_s: float, groups: Callable[[], list], expire: Callable, kind: str, *,
                       task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Every `tick_s`, call `expire(group)` for each of `groups()`, whether or not a request comes;
    a bug in one group is logged with its traceback and does not end the gateway's services."""
    task_status.started()
    while True:
        await trio.sleep(tick_s)
        for group in groups():
            try:
                expire(group)
            except Exception:  # noqa: BLE001 - see the docstring
                log.exception("expiring members of %s %r", kind, group.group_id)
