//! Example programs for the A2A SDK live in `src/bin/`; this library is empty.
