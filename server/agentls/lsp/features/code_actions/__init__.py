"""AgentLS: code_actions."""
