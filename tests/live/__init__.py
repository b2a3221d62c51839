"""Live tests: agentrt against a real model (SmolLM2-135M via llama-cpp-python)."""
