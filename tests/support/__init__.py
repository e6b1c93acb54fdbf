"""What the tests share, importable (test modules import it; `tests/conftest.py` turns some of it
into fixtures): the repository's paths, the stand-in provider APIs, the requests the capture
tests send, one way to run pytest on a generated project, and the JSON-pointer oracle."""
