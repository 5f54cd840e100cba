"""Documents kept in pieces for editors: an edit re-reads and re-checks one top-level op."""
