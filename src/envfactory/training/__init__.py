"""Training runs on envfactory worlds (the embedded model, on this machine's CPU)."""
