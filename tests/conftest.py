"""Fixtures every host test gets."""
import pytest

from lab.outputs import report


@pytest.fixture(autouse=True)
def report_time_word():
    """report.write() sets the module's TIME word for the report it writes
    ("time" for a run-here.sh directory); put it back after each test, so
    that no test sees the word an earlier one left."""
    word = report.TIME
    yield
    report.TIME = word
