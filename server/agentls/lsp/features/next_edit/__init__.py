"""AgentLS: next_edit."""
