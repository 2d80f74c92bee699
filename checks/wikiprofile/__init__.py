"""Data-quality checks of WikiProfile's construction assets (notes, section 2): every table's
shape and ids, the method's rules and counts, each table's references to the tables it was
built from, every rejects table's vocabulary and the LLM steps' accounting. The rules and
references block, so a bad table does not flow on; the LLM accounting and distractors that
overlap the gold warn.

One module per stage of the construction, as ``assets.wikiprofile`` has them: the sources
(the pages, from the project's JSON or Wikimedia's data (``wikipedia``), and the collection
the search filters search), the steps between (steps 2-17:
categories, entities, objects, verification, facts, the questions and their search
filters) and the release (steps 18-19, the benchmark); ``shared`` holds what their checks
have in common.
"""

from checks.wikiprofile.release import release_checks
from checks.wikiprofile.sources import source_checks
from checks.wikiprofile.steps import step_checks
from checks.wikiprofile.wikipedia import wikipedia_checks

wikiprofile_checks = [*wikipedia_checks, *source_checks, *step_checks, *release_checks]
