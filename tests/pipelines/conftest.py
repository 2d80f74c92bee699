import pytest

from tests.pipelines.recor_build import ScriptedRecor


@pytest.fixture(scope="session")
def scripted_recor(background_builds) -> ScriptedRecor:
    """The scripted RECOR build of every domain, started when the session began."""
    build = background_builds["scripted_recor"]
    build.wait()
    return ScriptedRecor(build.log.parent)
