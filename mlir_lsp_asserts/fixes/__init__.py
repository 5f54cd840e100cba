"""Fixes for assert findings (filled in by the fixes work)."""


def attach_fixes(result, settings):
    return None
