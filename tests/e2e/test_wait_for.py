"""conftest.wait_for (issue 52): only a falsy value or a value not there yet means "not yet"; a
failed assertion inside the predicate fails at once, so a wrong answer is not hidden by a right
one that comes later."""

import pytest

from conftest import wait_for


def answers(*values):
    """A predicate giving each of `values` in turn (an exception is raised), then the last."""
    seen = []

    def predicate():
        v = values[min(len(seen), len(values) - 1)]
        seen.append(v)
        if isinstance(v, BaseException):
            raise v
        return v

    return predicate, seen


def test_a_failed_assertion_fails_at_once_even_if_a_right_answer_would_follow():
    def wrong_then_right(seen=[]):  # noqa: B006 (the calls so far)
        seen.append(1)
        assert len(seen) > 1, "the first answer is wrong"
        return True

    with pytest.raises(AssertionError, match="the first answer is wrong"):
        wait_for(wrong_then_right, 5, "an answer", every=0)


def test_falsy_values_and_errors_of_a_value_not_there_yet_mean_not_yet():
    predicate, seen = answers(None, ConnectionRefusedError("not up"), KeyError("result"), FileNotFoundError("x"), 0, {"ok": 1})
    assert wait_for(predicate, 5, "the value", every=0) == {"ok": 1}
    assert len(seen) == 6


def test_the_time_running_out_names_what_and_the_last_error():
    predicate, _ = answers(ConnectionRefusedError("still not up"))
    with pytest.raises(AssertionError, match=r"the server: not within 0.2 s .*still not up"):
        wait_for(predicate, 0.2, "the server", every=0.05)
