"""After ``exit`` (or the client closing the stream): what still runs is cancelled and given
``WIND_DOWN_S`` to stop. A task that does not is named in the log with where it waits, and
the server exits anyway (lsp/transport/stdio_loop.py): ``asyncio.run`` would otherwise wait for it
forever,
holding a process whose editor is gone (a CI run once hung so, in asyncio's own clean-up)."""

from __future__ import annotations

import asyncio
import io
import logging

log = logging.getLogger(__name__)

WIND_DOWN_S = 5.0


async def wind_down(timeout: float) -> bool:
    """Cancel every other task and wait up to ``timeout`` seconds for them to stop; False,
    with each one that did not named in the log with where it waits, if any is left."""
    current = asyncio.current_task()
    running = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    for task in running:
        task.cancel()
    if not running:
        return True
    _, pending = await asyncio.wait(running, timeout=timeout)
    for task in pending:
        where = io.StringIO()
        task.print_stack(file=where)
        log.error("task %s did not stop within %g s of the exit: %s", task.get_name(), timeout,
                  where.getvalue())
    return not pending
