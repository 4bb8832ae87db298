"""Helpers for testing tirc and programs built with it."""
