"""rackgate: a pytest acceptance suite for AI inference racks (MI455 / Kimi-K3 / ATOM first)."""
__version__ = "0.1.0"
