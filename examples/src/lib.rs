//! Example programs for the A2A SDK; see `src/bin/` (each starts with a "Run with" line).
