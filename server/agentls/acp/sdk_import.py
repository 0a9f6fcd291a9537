"""Import the ACP SDK (``acp``) with its pydantic models' validators built on first use.

``acp.schema`` declares every request, response and update of the protocol as a pydantic
model, and building each model's validator when the module is imported is most of
`agentls acp`'s start-up, the time an editor waits for the ``initialize`` answer (issue 32,
``bench/bench_acp.py``: 290 ms instead of 350 to 430 for ``import acp`` alone, measured on
the shared machine). ``import_acp()`` imports the same package with pydantic's own
``defer_build`` switched on while it runs: each model class is complete, and builds its
validator the first time it validates or serialises (about 2 ms for what ``initialize``
uses). Models declared after it returns are built eagerly, as usual; nothing changes when
``acp`` is already imported (tests, a host process). Tests pin both
(tests/acp/test_sdk_import.py).
"""

from __future__ import annotations

import sys


def import_acp() -> None:
    if "acp" in sys.modules:
        return
    import pydantic

    config = pydantic.BaseModel.model_config
    before = config.get("defer_build")
    config["defer_build"] = True
    try:
        import acp  # noqa: F401  (the SDK's models, declared now, built on first use)
    finally:
        if before is not None:
            config["defer_build"] = before
        else:
            config.pop("defer_build", None)
