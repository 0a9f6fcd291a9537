"""The `sandbox.*` settings: a base module, so configuration need not import the tool layer.

How the sandbox uses them lives in ``agentls.sandbox.bwrap`` (which re-exports these names).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SandboxMode = Literal["auto", "required", "off"]


class SandboxSettings(BaseModel):
    """How programs the agent runs are confined. Embedded in the settings as `sandbox`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    mode: SandboxMode = Field(
        "auto", description="auto: sandbox when it works here, else ask before every "
        "command; required: refuse commands without a sandbox; off: run commands directly "
        "(unsafe: they see your files, keys and network).", examples=["required"])
    network: bool = Field(False, description="Let sandboxed commands use the network.",
                          examples=["true"])
    env: list[str] = Field(default_factory=list, description="Names of environment "
                           "variables passed into the sandbox, besides PATH, LANG and TERM.",
                           examples=["JAVA_HOME,GOPATH"])
    read_paths: list[str] = Field(default_factory=list, description="Paths under home "
                                  "directories sandboxed commands may read (home is hidden).",
                                  examples=["~/.cargo,~/.rustup"])
    memory_mb: int = Field(4096, ge=64, description="Address-space limit of a sandboxed "
                           "command, in MiB.", examples=[4096])
    ask: bool = Field(False, description="Ask before every sandboxed command anyway (by "
                      "default they run without asking: nothing leaves the sandbox unseen).",
                      examples=["true"])
