"""Typed state and context schemas: ``base`` plus one module per method."""
