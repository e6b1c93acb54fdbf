"""harness: prove an LLM agent's request headers are byte-stable."""
