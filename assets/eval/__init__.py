"""The shared retrieval and evaluation stack: retrievers, rerankers, readers, metrics, reports."""
