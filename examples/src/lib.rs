//! Example programs for the A2A SDK, to copy from: the programs in `src/bin/`
//! (each file's header says what it shows and how to run it), process agents
//! in Python and JavaScript with their gateway file in `process/`, a gateway
//! and a hub file in `gateway/`, a two-node cluster script in `cluster/`.
//! `tests/smoke.rs` runs each as its header says and checks what it prints.
