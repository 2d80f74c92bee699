"""QUIT's evaluation: retrieval, reranking and readers (``assets``), the readers' LLM steps
(``steps``), the context rules (``rules``), and its fine-tuning (``finetune``)."""
