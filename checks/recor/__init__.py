"""Data-quality checks of RECOR's construction assets: every table's shape, the references
between tables, the method's counts and ranges (paper section 3), every rejects table's
vocabulary and the LLM steps' accounting. Blocking on the construction tables, where a bad
table must not flow on; the quality analysis and the reports only report.

One module per stage of the construction, as ``assets.recor`` has them: the sources (the
observed files, the source questions and documents), the steps between (hard negatives and
the corpus, decomposition and verification, turns and conversations) and the release (the
benchmark, its quality analysis and the reports); ``shared`` holds what their checks have in
common.
"""

from checks.recor.release import release_checks
from checks.recor.sources import source_checks
from checks.recor.steps import step_checks

recor_checks = [*source_checks, *step_checks, *release_checks]
