"""`python -m agentls` is the `agentls` command."""

from agentls.cli.main import main

raise SystemExit(main())
