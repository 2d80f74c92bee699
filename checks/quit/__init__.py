"""Checks on the QUIT assets. Blocking where a bad table must not flow downstream.

One module per stage of the construction, as ``assets.quit`` has them: the sources (the
questions read and the reference passages), the steps between (screening, convergence,
metadata, splits, passages, labels, verification) and the release (the benchmark tables,
the release files and Table 1); ``shared`` holds what their checks have in common.
"""

from checks.quit.release import release_checks
from checks.quit.sources import source_checks
from checks.quit.steps import step_checks

quit_checks = [*source_checks, *step_checks, *release_checks]
