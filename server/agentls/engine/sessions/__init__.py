"""AgentLS: sessions."""
