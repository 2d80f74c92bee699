"""RECOR's evaluation: query strategies, retrieval runs, RAG generation (``assets``), the
generation and its judge (``steps``), the strategies and averagings (``rules``), and RECOR as
RETECO Track 2 scores it (``reteco``)."""
