"""QUIT's fine-tuned retrievers and rerankers: the training data and the models (``assets``),
the training (``steps``), the pair rules (``rules``) and the report (``report``)."""
