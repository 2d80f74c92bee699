"""WikiProfile's evaluation: subject models profiled and reported (``assets``), the sampled
and grading requests (``steps``), the profiling rules (``rules``) and the analyses over
profiled models (``analysis``)."""
