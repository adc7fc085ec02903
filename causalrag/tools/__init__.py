"""The tools the graphs' nodes call: models, scorers, the passage store and its indexes."""
