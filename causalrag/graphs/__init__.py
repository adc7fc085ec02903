"""One graph builder per method (``graphs/<name>.py``) and the registry that finds them."""
