"""p2paudit: which point-to-point communication sites can fire in a run, which did, and which
contradict the configuration."""

__version__ = "0.1.0"
