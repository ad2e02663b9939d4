from slow import dedupe


def test_keeps_the_first_of_each():
    assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_empty():
    assert dedupe([]) == []
