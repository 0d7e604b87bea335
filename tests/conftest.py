"""Fixtures every host test gets."""
import pytest

from lab.core import util
from lab.outputs import report


@pytest.fixture(autouse=True)
def report_time_word():
    """report.write() sets the module's TIME word for the report it writes
    ("time" for a run-here.sh directory); put it back after each test, so
    that no test sees the word an earlier one left."""
    word = report.TIME
    yield
    report.TIME = word


@pytest.fixture(autouse=True)
def lab_may_start_children():
    """util.stop_children() (which cli.main() runs on its way out) makes
    util.spawn() refuse for the rest of the process; a test that ran a
    command in this process must not leave the next test unable to run
    one."""
    yield
    util._stopping.clear()
