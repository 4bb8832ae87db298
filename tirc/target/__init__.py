"""Targets: the target kinds, their options and defaults, and the facts of each device arch."""
