"""research-pydocs: questions about the running interpreter's standard library."""
