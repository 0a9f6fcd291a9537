"""AgentLS: policy."""
