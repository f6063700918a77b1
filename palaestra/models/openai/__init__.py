"""OpenAI-compatible endpoints: Responses, Chat Completions, auto-detection, retries."""
