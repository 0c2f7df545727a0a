"""Sim executables with the real names and output formats, one module each."""
