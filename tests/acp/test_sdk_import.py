"""``import_acp()`` (acp/sdk_import.py): the SDK's models build their validators on first use,
still validate and serialise as the protocol says, and models declared afterwards (the
engine's) are built eagerly as usual. In a fresh interpreter: this one has the SDK already."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import pydantic
from agentls.acp.sdk_import import import_acp

import_acp()
from acp.schema import InitializeRequest, InitializeResponse

assert not InitializeRequest.__pydantic_complete__  # declared, not built yet
request = InitializeRequest.model_validate(
    {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}, "terminal": True}})
assert InitializeRequest.__pydantic_complete__ and request.client_capabilities.terminal is True
answer = InitializeResponse(protocol_version=1).model_dump(by_alias=True, exclude_none=True)
assert answer["protocolVersion"] == 1, answer
assert "defer_build" not in pydantic.BaseModel.model_config


class Later(pydantic.BaseModel):
    x: int


assert Later.__pydantic_complete__
print("ok")
"""


def test_the_sdk_models_build_on_first_use_and_later_models_eagerly() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
