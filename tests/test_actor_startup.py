"""actors/startup.py: the collector is off for the step and back as it was after it, error or not."""

import gc

import pytest

from actors.startup import collector_paused


def test_the_collector_is_paused_for_the_step_and_restored_as_it_was():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ImportError), collector_paused():
        raise ImportError("a backend that cannot load")
    assert gc.isenabled()
    gc.disable()  # a process that runs without it keeps running without it
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
