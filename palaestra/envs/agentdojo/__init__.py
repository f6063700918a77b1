"""AgentDojo (prompt injection in tool-using agents), run and scored by its own package."""
