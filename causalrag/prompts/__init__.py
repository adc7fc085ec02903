"""Prompt templates as data, one module per method (our own words; each cites the paper's section)."""
