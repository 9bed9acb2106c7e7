"""The jobs vllmdiag runs. They emit events to an observer and never print."""
