import pytest

from tests.servers import free_port
from tests.standin import Server


@pytest.fixture
def standins(tmp_path, monkeypatch):
    """Starts stand-in servers (``standins(name, **options)``), each its own process, stopped
    after the test."""
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")  # the OpenAI SDK refuses to start without one
    started = []

    def start(name="standin", **kw) -> Server:
        started.append(Server(free_port(), name=name, log=tmp_path / f"{name}.log", **kw))
        return started[-1]

    yield start
    for s in started:
        s.stop()
