"""What iree-compile flags mean, as plain data: the flag profiles (flags.py: built-in and user
profiles, splitting, renames across releases, the target) and whether a set of flags makes IREE
strip the asserts itself (strip_assertions.py). No compile runs here: the rules, the settings and
dispatch/ all read these, so they stand below all of them."""
