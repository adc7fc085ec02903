"""Node functions, one module per method plus ``common`` (shared nodes and helpers)."""
