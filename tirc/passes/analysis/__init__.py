"""Analyses the passes share (no pass lives here): integer arithmetic (the analyzer, canonical
forms, bound deduction), region bounds and relaxation, the simplifier's rules, and the
host-or-device context of a statement."""
