"""The built-in terminal task families, one module each."""
