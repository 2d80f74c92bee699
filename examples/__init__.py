"""Example systems written against the project's bring-your-own-system contracts, the way a
user's own package would be: registered by entry point (``kind: entrypoint``) in
``resources/retrievers.yaml`` or ``resources/rerankers.yaml``. They import nothing from the
project."""
