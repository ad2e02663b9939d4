"""A function the optimize quickstart makes faster."""


def dedupe(items):
    """The items without repeats, in the order they first appear."""
    out = []
    for item in items:
        seen = False
        for kept in out:  # a scan of everything kept so far, for every item: quadratic
            if kept == item:
                seen = True
                break
        if not seen:
            out.append(item)
    return out
