//! Agents that are external commands: a child process speaking JSON lines
//! over stdin/stdout.
