"""The families of the modern validation set, one module each, and what they share (make_scenarios.py)."""
