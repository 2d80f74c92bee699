"""The evaluation of the three benchmarks. The shared retrieval and evaluation stack sits at
this root (sources, runs, metrics, retrieve, rerankers, reports, leaderboard); each benchmark's
evaluation is a package in the construction packages' floor plan (``quit/``, ``recor/``,
``wikiprofile/``)."""
