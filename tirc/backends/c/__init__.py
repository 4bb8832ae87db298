"""The C source backend."""
