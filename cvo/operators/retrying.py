"""How the simulated operators outlive API errors: a request is made again after a back-off, 1 s doubling to
10 s, until it lands (an operator's reconcile loop requeued with a rate limiter)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from cvo.cluster.api import ApiError
from cvo.log import get_logger

T = TypeVar("T")
RETRY_INITIAL, RETRY_CAP = 1.0, 10.0
_log = get_logger("cvo.operators")


async def retrying(what: str, call: Callable[[], Awaitable[T]], event: str = "operator request failed; retrying",
                   logger: Any = _log) -> T:
    """``call()`` until it succeeds: after an API error (a conflict too), again after the back-off."""
    delay = RETRY_INITIAL
    while True:
        try:
            return await call()
        except ApiError as err:
            logger.info(event, request=what, error=str(err), retry_in=delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_CAP)
